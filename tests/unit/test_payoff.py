"""Unit tests of pdbench.core.payoff: lookups, validation paths, PD conditions, GTFT generosity."""

from __future__ import annotations

import copy
import math

import pytest

from pdbench.core.payoff import DEFAULT_MATRIX, PayoffError, PayoffMatrix
from pdbench.core.types import Action


def nested(cc, cd, dc, dd) -> dict:
    """A `{C: {C: [a, b], D: ...}, D: {...}}` table from the four cells."""
    return {"C": {"C": list(cc), "D": list(cd)}, "D": {"C": list(dc), "D": list(dd)}}


# --- default matrix ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # The spec's default: (C,C)=(3,3), (C,D)=(0,5), (D,C)=(5,0), (D,D)=(1,1).
        (Action.C, Action.C, (3.0, 3.0)),
        (Action.C, Action.D, (0.0, 5.0)),
        (Action.D, Action.C, (5.0, 0.0)),
        (Action.D, Action.D, (1.0, 1.0)),
    ],
)
def test_default_matrix_lookup_all_four_pairs(a, b, expected):
    for matrix in (PayoffMatrix(), PayoffMatrix.from_nested(DEFAULT_MATRIX)):
        assert matrix.payoffs(a, b) == expected
        # Plain strings work the same as Actions.
        assert matrix.payoffs(a.value, b.value) == expected


def test_default_matrix_named_payoffs():
    m = PayoffMatrix()
    # R = CC to A, S = CD to A, T = DC to A, P = DD to A.
    assert (m.reward, m.sucker, m.temptation, m.punishment) == (3.0, 0.0, 5.0, 1.0)
    assert m.is_symmetric()


def test_lookup_is_from_a_s_point_of_view_in_a_custom_matrix():
    # Every number distinct so a swapped cell or swapped pair would show.
    m = PayoffMatrix.from_nested(nested((4, 4.5), (-1, 7), (6, -2), (0.5, 0.25)))
    assert m.payoffs("C", "C") == (4.0, 4.5)
    assert m.payoffs("C", "D") == (-1.0, 7.0)
    assert m.payoffs("D", "C") == (6.0, -2.0)
    assert m.payoffs("D", "D") == (0.5, 0.25)
    assert (m.reward, m.sucker, m.temptation, m.punishment) == (4.0, -1.0, 6.0, 0.5)


def test_lookup_rejects_non_actions():
    with pytest.raises(ValueError):
        PayoffMatrix().payoffs("X", "C")


def test_nested_round_trip():
    table = nested((4, 4), (-1, 7), (6, -2), (0.5, 0.5))
    m = PayoffMatrix.from_nested(table)
    assert m.as_nested() == table
    assert PayoffMatrix.from_nested(m.as_nested()) == m


def test_from_nested_does_not_mutate_input():
    table = copy.deepcopy(DEFAULT_MATRIX)
    PayoffMatrix.from_nested(table)
    assert table == DEFAULT_MATRIX


# --- validation errors name the cell ----------------------------------------------------------


def _error_of(table: object) -> PayoffError:
    with pytest.raises(PayoffError) as info:
        PayoffMatrix.from_nested(table)
    return info.value


def test_missing_cell_names_its_path():
    table = copy.deepcopy(DEFAULT_MATRIX)
    del table["D"]["C"]
    err = _error_of(table)
    assert err.path == "D.C"
    assert str(err).startswith("D.C")


def test_missing_row_names_the_row():
    table = copy.deepcopy(DEFAULT_MATRIX)
    del table["D"]
    assert _error_of(table).path == "D"


@pytest.mark.parametrize(
    ("row", "col", "bad_cell"),
    [
        ("C", "D", ["a", 5]),  # non-number
        ("D", "D", [1, None]),  # non-number
        ("C", "C", [True, 3]),  # bool is not accepted as a number
        ("D", "C", [float("nan"), 0]),  # NaN
        ("C", "D", [0, float("inf")]),  # inf
        ("D", "D", [float("-inf"), 1]),  # -inf
        ("C", "C", [3, 3, 3]),  # wrong pair length
        ("D", "C", [5]),  # wrong pair length
        ("C", "D", 5),  # not a pair at all
        ("D", "D", "1,1"),  # a string is not a pair
    ],
)
def test_bad_cell_names_its_path(row, col, bad_cell):
    table = copy.deepcopy(DEFAULT_MATRIX)
    table[row][col] = bad_cell
    err = _error_of(table)
    assert err.path == f"{row}.{col}"
    assert isinstance(err, ValueError)


def test_unknown_move_key_in_row_names_its_path():
    table = copy.deepcopy(DEFAULT_MATRIX)
    table["C"]["X"] = [1, 1]
    assert _error_of(table).path == "C.X"


def test_unknown_top_level_move_key_names_it():
    table = copy.deepcopy(DEFAULT_MATRIX)
    table["Q"] = {"C": [1, 1], "D": [1, 1]}
    assert _error_of(table).path == "Q"


def test_non_mapping_table_is_an_error():
    err = _error_of([[3, 3], [0, 5]])
    assert err.path == ""


# --- PD conditions ----------------------------------------------------------------------------


def test_default_matrix_is_a_prisoners_dilemma():
    assert PayoffMatrix().pd_warnings() == []


def test_ordering_violation_warns():
    # Stag hunt: R=5 > T=3, so T > R > P > S fails; 2R=10 > T+S=3 still holds; symmetric.
    m = PayoffMatrix.from_nested(nested((5, 5), (0, 3), (3, 0), (1, 1)))
    warnings = m.pd_warnings()
    assert len(warnings) == 1
    assert "T > R > P > S" in warnings[0]


def test_ordering_violation_p_below_s_warns():
    # T=5 > R=3, but P=0 < S=1: ordering fails; 2R=6 > T+S=6? No: 6 > 6 is false -> two warnings.
    m = PayoffMatrix.from_nested(nested((3, 3), (1, 5), (5, 1), (0, 0)))
    warnings = m.pd_warnings()
    assert any("T > R > P > S" in w for w in warnings)
    assert any("2R > T + S" in w for w in warnings)
    assert len(warnings) == 2


def test_alternation_pays_more_warns():
    # T=10 > R=3 > P=1 > S=0 holds, but 2R = 6 <= T+S = 10.
    m = PayoffMatrix.from_nested(nested((3, 3), (0, 10), (10, 0), (1, 1)))
    warnings = m.pd_warnings()
    assert len(warnings) == 1
    assert "2R > T + S" in warnings[0]


def test_alternation_boundary_2r_equal_t_plus_s_warns():
    # T=6, R=3, P=1, S=0: 2R = 6 = T+S, the strict condition 2R > T+S fails.
    m = PayoffMatrix.from_nested(nested((3, 3), (0, 6), (6, 0), (1, 1)))
    warnings = m.pd_warnings()
    assert len(warnings) == 1
    assert "2R > T + S" in warnings[0]


def test_asymmetric_matrix_warns():
    # A's view is the default PD, but B gets 4 for mutual cooperation.
    m = PayoffMatrix.from_nested(nested((3, 4), (0, 5), (5, 0), (1, 1)))
    assert not m.is_symmetric()
    warnings = m.pd_warnings()
    assert len(warnings) == 1
    assert "symmetric" in warnings[0]


# --- Nowak-Sigmund generosity -----------------------------------------------------------------


def test_generosity_default_is_one_third():
    # min(1 - (T-R)/(R-S), (R-P)/(T-P)) = min(1 - (5-3)/(3-0), (3-1)/(5-1)) = min(1/3, 1/2) = 1/3
    assert math.isclose(PayoffMatrix().nowak_sigmund_generosity(), 1 / 3, rel_tol=1e-12)


def test_generosity_custom_matrix():
    # T=4, R=3, P=2, S=0: min(1 - (4-3)/(3-0), (3-2)/(4-2)) = min(2/3, 1/2) = 1/2
    m = PayoffMatrix.from_nested(nested((3, 3), (0, 4), (4, 0), (2, 2)))
    assert math.isclose(m.nowak_sigmund_generosity(), 0.5, rel_tol=1e-12)


def test_generosity_is_clipped_to_unit_interval():
    # T=10, R=3, P=1, S=0: 1 - (10-3)/(3-0) = 1 - 7/3 = -4/3 -> clipped to 0.
    m = PayoffMatrix.from_nested(nested((3, 3), (0, 10), (10, 0), (1, 1)))
    assert m.nowak_sigmund_generosity() == 0.0

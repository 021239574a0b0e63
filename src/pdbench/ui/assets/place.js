/* Keeping the replay's place (its round and zoom window) in the app's URL, so that a tab switch,
   a refresh or a copied link opens the replay where it was (see pdbench.ui.url_state).

   The replay runs in an iframe of the app's origin (st.iframe): it rewrites the app page's
   query string with history.replaceState (no new history entry: Back and Forward move between
   views, not rounds) and fires popstate, on which Streamlit reruns the script with the new
   query string. Written 0.5 s after the place last changed, never while playing (a rerun per
   round would be wasteful): when it pauses or ends. Opening is no change. Nothing is written when the page's URL
   names another game than the one shown (the user picked another meanwhile). */
"use strict";
var PDB = window.PDB || {};
window.PDB = PDB;

/* The query string `search` with the place written in, or null when it names another game
   than place.game ({parameter: value}). */
PDB.placeQuery = function (search, place, round, lo, hi) {
  var params = new URLSearchParams(search);
  for (var k in place.game) if (params.get(k) !== place.game[k]) return null;
  params.set(place.names.round, String(round));
  params.set(place.names.zoom, lo + "-" + hi);
  return "?" + params.toString();
};

/* Returns the function to call when the place of playback `pb` or timeline `tl` changes. */
PDB.keepPlace = function (pb, tl, place) {
  var host = null, timer = null;
  try {
    if (window.parent !== window && window.parent.location.search !== undefined) host = window.parent;
  } catch (e) {
    host = null;  // another origin: no URL to keep the place in
  }
  if (!host || !place || !place.names || !place.game) return function () {};
  function now() { return pb.frame + ":" + tl.lo + "-" + tl.hi; }
  var written = now();  // the place it opened on (a redraw on resize is no change)
  function write() {
    timer = null;
    if (pb.playing || now() === written) return;
    written = now();
    var loc = host.location;
    var q = PDB.placeQuery(loc.search, place, pb.frame, tl.lo, tl.hi);
    if (q === null || q === loc.search) return;
    host.history.replaceState(host.history.state, "", loc.pathname + q + loc.hash);
    host.dispatchEvent(new PopStateEvent("popstate", {state: host.history.state}));
  }
  return function () {
    clearTimeout(timer);
    timer = pb.playing ? null : setTimeout(write, 500);
  };
};

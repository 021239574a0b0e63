"""Tests of the Streamlit app (AppTest and a real Chromium) and the screenshot helper."""

"""Bundled sample data for `pyprecision demo` (see scripts/make_sample_data.py)."""

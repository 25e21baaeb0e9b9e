"""One module per dashboard; grafana/build.py assembles them."""

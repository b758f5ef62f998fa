"""The HTTP side port (`[server] http_port`): /metrics, /healthz, /readyz and the status page.

`site.serve_http` listens; `protocol` reads one bounded request and writes the answer;
`access` decides who may see and cancel; `health` answers /readyz and the source gauges;
`metrics_page` exposes `gateway.state.metrics` through prometheus-client; `status_page`
and `plan_svg` render the page.
"""

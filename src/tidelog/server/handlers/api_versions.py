"""ApiVersions (key 18, v0-3): the advertised ranges are the router's table, nothing else."""

from ..router import control_route

API_KEY = 18


def register(broker) -> None:
    router = broker.router

    def handle(ctx, request):
        return {
            "error_code": 0,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in router.version_ranges()
            ],
            "throttle_time": 0,
        }

    router.add(control_route(API_KEY, 0, 3, handle))

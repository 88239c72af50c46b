"""Drives the official Flagship Python SDK against a Flagship-compatible server.

    python drive.py BASE_URL ENV_ID API_KEY MODE

MODE is `api` (Decision API) or `bucketing`. The SDK's endpoints are constants of its
`http_helper` module (it has no setting for them): they are pointed at BASE_URL, as a test of the
real backend would point them at a proxy. One visitor with a context fetches its flags, reads two
with exposure, sends an event and withdraws nothing; the SDK is stopped, which sends what waits.
Prints one JSON object: the values read and what the SDK logged at warning level or above.
"""
import json
import sys
import time

import flagship
from flagship import Flagship
from flagship import http_helper
from flagship.config import Bucketing, DecisionApi
from flagship.hits import Event, EventCategory
from flagship.log_manager import LogLevel, LogManager
from flagship.tracking_manager import CacheStrategy, TrackingManagerConfig

base, env_id, api_key, mode = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
http_helper.URL_DECISION_API = base + "/v2/"
http_helper.URL_ACTIVATE = base + "/v2/activate"
http_helper.URL_TRACKING = base + "/"
http_helper.URL_BUCKETING = base + "/{}/bucketing.json"

logged = []


class Recorder(LogManager):
    def log(self, tag, level, message):
        if LogLevel.WARNING.value <= level.value <= LogLevel.CRITICAL.value:
            logged.append("%s %s: %s" % (level.name, tag, message))

    def exception(self, tag, exception, traceback):
        logged.append("EXCEPTION %s: %s" % (tag, exception))


tracking = TrackingManagerConfig(cache_strategy=CacheStrategy.CONTINUOUS_CACHING, time_interval=200, max_pool_size=1)
settings = dict(log_manager=Recorder(), log_level=LogLevel.ALL, timeout=3000, tracking_manager_config=tracking)
config = DecisionApi(**settings) if mode == "api" else Bucketing(polling_interval=60000, **settings)
Flagship.start(env_id, api_key, config)
if mode == "bucketing":
    deadline = time.time() + 10
    while Flagship.status().name != "READY" and time.time() < deadline:
        time.sleep(0.05)

visitor = Flagship.new_visitor("py-visitor-1", context={"plan": "pro", "age": 32}, consent=True)
visitor.fetch_flags()
values = {
    "status": Flagship.status().name,
    "btnColor": visitor.get_flag("btnColor", "default").value(),
    "discount": visitor.get_flag("discount", -1).value(),
}
visitor.send_hit(Event(EventCategory.ACTION_TRACKING, "checkout"))
time.sleep(0.5)
Flagship.stop()
print(json.dumps({"values": values, "logged": logged, "sdk": getattr(flagship, "__version__", "3.0.1")}, sort_keys=True))

"""The official Flagship Python SDK's bucketing decisions, offline.

Reads one JSON object on standard input: {"file": <a bucketing file>, "contexts": [<context>...],
"visitors": ["id"...]}. For each context and visitor, runs the SDK's own decision
(`BucketingManager.get_campaigns_modifications`: its targeting, its MurmurHash, its allocation
walk) on the file, with no assignment history, and prints
{"decisions": [[{variationGroupId: variationId}...per visitor]...per context]}.
"""
import json
import sys

from flagship.bucketing_manager import BucketingManager
from flagship.campaign import Campaign

request = json.load(sys.stdin)
campaigns = Campaign.parse_campaigns(request["file"])


class Visitor:
    """What the SDK's decision reads of a visitor; its SEGMENT hit goes nowhere."""

    def __init__(self, visitor_id, context):
        self.visitor_id = visitor_id
        self.context = dict(context)
        self.assignations = {}

    def send_hit(self, hit):
        pass


manager = BucketingManager.__new__(BucketingManager)
manager.campaigns = campaigns
decisions = []
for context in request["contexts"]:
    row = []
    for visitor_id in request["visitors"]:
        visitor = Visitor(visitor_id, context)
        succeeded, _ = manager.get_campaigns_modifications(visitor)
        if not succeeded:
            raise SystemExit("the SDK's decision failed for %s" % visitor_id)
        row.append(visitor.assignations)
    decisions.append(row)
print(json.dumps({"decisions": decisions}, sort_keys=True))

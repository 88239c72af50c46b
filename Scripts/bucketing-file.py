#!/usr/bin/env python3
"""A bucketing file of random campaigns, for measuring what a large file costs (make scale).

    Scripts/bucketing-file.py CAMPAIGNS [SEED] > bucketing.json

Each campaign has one or two variation groups (one in three has two), each group three targeting
rules on context keys (age, plan, lang, country, visits) with mixed operators, and two or three
variations sharing the allocation, each with three flags (a number, a string, a boolean or an
object). About 1.4 KB a campaign: 6,000 campaigns make 8.3 MB, 10,000 make 13.8 MB (over the SDK's
default 10 MiB limit). The same CAMPAIGNS and SEED give the same bytes.
"""
import json
import random
import string
import sys


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    count = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)

    def token():
        return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(20))

    operators = ["EQUALS", "NOT_EQUALS", "CONTAINS", "GREATER_THAN", "LOWER_THAN", "STARTS_WITH"]
    campaigns = []
    for number in range(count):
        groups = []
        for group in range(rng.choice([1, 1, 2])):
            rules = []
            for _ in range(3):
                operator = rng.choice(operators)
                if operator in ("GREATER_THAN", "LOWER_THAN"):
                    value = rng.randint(0, 100)
                else:
                    value = rng.choice(["fr", "en", "de", "premium", "free"])
                rules.append({"key": rng.choice(["age", "plan", "lang", "country", "visits"]),
                              "operator": operator, "value": value})
            shares = rng.choice([2, 3])
            variations = []
            for index in range(shares):
                flags = {f"flag_{number}_{key}": rng.choice([rng.randint(0, 1000), "value-" + token(), True,
                                                            {"nested": token(), "n": rng.random()}])
                         for key in range(3)}
                variations.append({"id": token(), "name": f"variation {index}", "reference": index == 0,
                                   "allocation": 100 // shares, "modifications": {"type": "FLAG", "value": flags}})
            groups.append({"id": token(), "name": f"group {group}",
                           "targeting": {"targetingGroups": [{"targetings": rules}]}, "variations": variations})
        campaigns.append({"id": token(), "name": f"campaign {number}", "type": "ab", "slug": f"campaign-{number}",
                          "variationGroups": groups})
    json.dump({"panic": False, "accountSettings": {"enabledXPC": False}, "campaigns": campaigns}, sys.stdout)


if __name__ == "__main__":
    main()

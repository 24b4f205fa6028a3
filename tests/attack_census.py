"""A pytest plugin that prints, after collection, the attack tests of each surface and file.

Loaded by ``tests/test_guarantees_counts.py`` as ``pytest --collect-only -p
attack_census``: the last line printed is a JSON list of ``[surface, file, count]``,
one per surface and file, from the tests marked ``pytest.mark.attack(surface)``.
"""

import json
from collections import Counter


def pytest_collection_finish(session):
    counts = Counter()
    for item in session.items:
        for mark in item.iter_markers("attack"):
            counts[mark.args[0], item.location[0]] += 1
    rows = [[surface, path, n] for (surface, path), n in sorted(counts.items())]
    print("\n" + json.dumps(rows))

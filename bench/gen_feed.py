#!/usr/bin/env python3
"""Write a flight-feed-like stream of sparse JSON updates, one object per line.

Each message has an `id` (one of KEYS flights), a `type` (position, flightplan,
departure, arrival, cancellation, extendedFlightInfo) and 2-8 further fields drawn from
that type's share of a pool of 36 field names, with values of mixed kinds (integers,
reals, strings, nulls, now and then a nested object). Fixed seed: same bytes every run.

    python3 bench/gen_feed.py MESSAGES KEYS OUT.jsonl [--seed N]
"""
import argparse
import json
import random

FIELDS = {
    "position": ["lat", "lon", "alt", "gs", "heading", "clock", "updateType", "air_ground", "squawk", "vertRate", "alt_gnss", "speed_ias"],
    "flightplan": ["ident", "reg", "orig", "dest", "route", "aircrafttype", "speed", "alt", "edt", "eta", "fdt", "waypoints"],
    "departure": ["ident", "orig", "adt", "actual_out", "actual_off", "gate_origin", "terminal_origin"],
    "arrival": ["ident", "dest", "aat", "actual_on", "actual_in", "gate_destination", "terminal_destination", "baggage_claim"],
    "cancellation": ["ident", "status", "reason"],
    "extendedFlightInfo": ["atcident", "ident", "reg", "aircrafttype", "predicted_off", "predicted_on", "predicted_in", "status"],
}
KINDS = list(FIELDS)
WEIGHTS = [60, 12, 8, 8, 2, 10]


def value(rnd, name):
    r = rnd.random()
    if r < 0.03:
        return None
    if name in ("lat", "lon"):
        return round(rnd.uniform(-90, 90), 5)
    if name in ("alt", "gs", "heading", "speed", "vertRate", "alt_gnss", "speed_ias"):
        return rnd.randint(0, 45000)
    if name in ("clock", "edt", "eta", "fdt", "adt", "aat") or name.startswith(("actual_", "predicted_")):
        return 1_600_000_000 + rnd.randint(0, 10_000_000)
    if name == "waypoints":
        return [{"lat": round(rnd.uniform(-90, 90), 3), "lon": round(rnd.uniform(-180, 180), 3)} for _ in range(rnd.randint(1, 3))]
    return "%s-%d" % (name[:3].upper(), rnd.randint(0, 99999))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("messages", type=int)
    ap.add_argument("keys", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2021)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    with open(a.out, "w") as f:
        buf = []
        for _ in range(a.messages):
            kind = rnd.choices(KINDS, WEIGHTS)[0]
            pool = FIELDS[kind]
            msg = {"id": "FL%06d" % rnd.randrange(a.keys), "type": kind}
            for name in rnd.sample(pool, min(len(pool), rnd.randint(2, 8)) - 1):
                msg[name] = value(rnd, name)
            buf.append(json.dumps(msg, separators=(",", ":")))
            if len(buf) >= 50_000:
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            f.write("\n".join(buf) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write a flight-feed-like stream of sparse JSON updates, one object per line.

Each message has an `id` (one of KEYS flights), a `type` (position, flightplan,
departure, arrival, cancellation, extendedFlightInfo) and 2-8 further fields drawn from
that type's share of a pool of 36 field names, with values of mixed kinds (integers,
reals, strings, nulls, now and then a nested object). Fixed seed: same bytes every run.

With --shape flight, the stream is shaped like a real flight feed instead: every value a
JSON string (numbers and epoch times included, as such feeds send them), keys of about
30 characters, about 12 fields a message (about 270 bytes), and each key's four or so
messages spread over hours of feed time, in time order, so that about a quarter of the
messages bring a new key (KEYS is then ignored: it is MESSAGES / 4).

    python3 bench/gen_feed.py MESSAGES KEYS OUT.jsonl [--seed N] [--shape mixed|flight]
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


AIRLINES = ["UAL", "DAL", "AAL", "SWA", "BAW", "DLH", "AFR", "KLM", "RYR", "EZY", "QFA", "ANA"]
AIRPORTS = ["KSFO", "KJFK", "KLAX", "EGLL", "EDDF", "LFPG", "EHAM", "RJTT", "YSSY", "KORD", "KATL", "LEMD"]


def flight_message(rnd, key, kind, t):
    """One message of `kind` about flight `key` at feed time `t`: every value a string."""
    def num(lo, hi, digits=0):
        return f"{rnd.uniform(lo, hi):.{digits}f}" if digits else str(rnd.randint(lo, hi))
    msg = {"id": key, "type": kind, "pitr": str(t), "ident": key.split("-")[0],
           "src": rnd.choice(["ADS-B", "MLAT", "FAA", "ASDI"])}
    if kind == "position":
        msg.update(lat=num(-90, 90, 5), lon=num(-180, 180, 5), alt=num(0, 45000), gs=num(0, 600),
                   heading=num(0, 359), clock=str(t - rnd.randint(0, 30)), updateType=rnd.choice(["A", "Z", "X"]),
                   air_ground=rnd.choice(["A", "G"]))
    elif kind == "flightplan":
        msg.update(reg="N" + num(100, 999) + "XY", orig=rnd.choice(AIRPORTS), dest=rnd.choice(AIRPORTS),
                   aircrafttype=rnd.choice(["B738", "A320", "B77W", "A359"]), speed=num(300, 500),
                   alt=num(20000, 41000), edt=str(t + rnd.randint(600, 7200)), eta=str(t + rnd.randint(7200, 40000)))
    elif kind == "departure":
        msg.update(orig=rnd.choice(AIRPORTS), adt=str(t), actual_out=str(t - 600), actual_off=str(t),
                   gate_origin=rnd.choice("ABCDE") + num(1, 60), terminal_origin=num(1, 5), status="departed")
    else:
        msg.update(dest=rnd.choice(AIRPORTS), aat=str(t), actual_on=str(t), actual_in=str(t + 420),
                   gate_destination=rnd.choice("ABCDE") + num(1, 60), terminal_destination=num(1, 5),
                   baggage_claim=num(1, 20))
    return msg


def write_flight(rnd, messages, out):
    """The flight-shaped stream (see the module docs)."""
    keys = max(1, messages // 4)
    events = []
    for k in range(keys):
        start = 1_700_000_000 + int(k * 86_400 / keys * 8)
        key = f"{rnd.choice(AIRLINES)}{rnd.randint(1, 9999)}-{start}-{rnd.randint(0, 99999):05d}-schedule"
        kinds = ["flightplan", "departure", "position", "arrival"]
        times = sorted(start + rnd.randint(0, 6 * 3600) for _ in kinds)
        events.extend((t, key, kind) for t, kind in zip(times, kinds))
    events.sort()
    with open(out, "w") as f:
        buf = []
        for t, key, kind in events[:messages]:
            buf.append(json.dumps(flight_message(rnd, key, kind, t), separators=(",", ":")))
            if len(buf) >= 50_000:
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            f.write("\n".join(buf) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("messages", type=int)
    ap.add_argument("keys", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2021)
    ap.add_argument("--shape", choices=["mixed", "flight"], default="mixed")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    if a.shape == "flight":
        write_flight(rnd, a.messages, a.out)
        return
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

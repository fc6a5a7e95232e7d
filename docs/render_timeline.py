"""Draw one train step of a hiapi timeline (Chrome trace JSON) as a PNG, with Pillow.

    HIAPI_TIMELINE=trace.json mpiexec -n 2 python train.py
    python docs/render_timeline.py trace.json docs/img/timeline.png --step -1

Perfetto or chrome://tracing is the tool to explore a trace; this script makes the still
picture in the README from a real one. For each rank (pid) it draws the main thread's spans
stacked by nesting depth (train step, ops, compressions inside them), the helper threads, and a
lane of the exchanges in flight (asynchronous begin/end pairs: a bucket's allreduce or
compressed exchange from its start op to its wait op). The window is the chosen step on every
rank.
"""
import argparse
import json
from collections import defaultdict

from PIL import Image, ImageDraw, ImageFont

COLOURS = {"fit": (190, 190, 190), "compression": (242, 142, 43), "exchange": (89, 161, 79),
           "collective": (225, 87, 89)}
OP_COLOURS = [(78, 121, 167), (118, 183, 178), (156, 117, 95), (176, 122, 161),
              (237, 201, 72), (186, 176, 172), (160, 203, 232), (140, 170, 210)]
COLLECTIVES = {"allreduce_start", "allreduce_wait", "compressed_start", "compressed_wait",
               "compressed_allreduce"}
ROW, LEFT, WIDTH = 22, 250, 1400


def font(size):
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default()


def colour(event):
    if event["name"] in COLLECTIVES:
        return COLOURS["collective"]
    if event.get("cat") == "op":
        return OP_COLOURS[sum(map(ord, event["name"])) % len(OP_COLOURS)]
    return COLOURS.get(event.get("cat"), (150, 150, 150))


def window(events, step):
    """(start, end) in µs covering train step number ``step`` on every rank."""
    by_rank = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e["name"] == "train step":
            by_rank[e["pid"]].append(e)
    chosen = [sorted(spans, key=lambda e: e["ts"])[step] for spans in by_rank.values()]
    return min(e["ts"] for e in chosen), max(e["ts"] + e["dur"] for e in chosen)


def lanes(events, start, end):
    """Rows to draw: (label, [(event, ...)]) per rank and thread, nesting depth as sub-rows."""
    rows = []
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e["ts"] < end and e["ts"] + e["dur"] > start \
                and e["name"] != "epoch":
            spans[e["pid"], e["tid"]].append(e)
    flights = defaultdict(list)
    opened = {}
    for e in sorted((e for e in events if e.get("ph") in "be"), key=lambda e: e["ts"]):
        key = (e["pid"], e["id"], e["name"])
        if e["ph"] == "b":
            opened[key] = e
        elif key in opened:
            b = opened.pop(key)
            if b["ts"] < end and e["ts"] > start:
                flights[e["pid"]].append({"name": e["name"], "cat": "exchange", "ts": b["ts"],
                                          "dur": e["ts"] - b["ts"]})
    for pid in sorted({p for p, _ in spans} | set(flights)):
        for tid in sorted(t for p, t in spans if p == pid):
            depth_rows, stack = defaultdict(list), []
            for e in sorted(spans[pid, tid], key=lambda e: (e["ts"], -e["dur"])):
                while stack and stack[-1] <= e["ts"]:
                    stack.pop()
                depth_rows[len(stack)].append(e)
                stack.append(e["ts"] + e["dur"])
            label = f"rank {pid} {names.get((pid, tid), f'thread {tid}')}"
            for depth in sorted(depth_rows):
                rows.append((label if depth == 0 else "", depth_rows[depth]))
        flight_rows = []
        for e in sorted(flights[pid], key=lambda e: e["ts"]):
            for row in flight_rows:
                if row[-1]["ts"] + row[-1]["dur"] <= e["ts"]:
                    row.append(e)
                    break
            else:
                flight_rows.append([e])
        for i, row in enumerate(flight_rows):
            rows.append((f"rank {pid} in flight" if i == 0 else "", row))
        rows.append(("", []))
    return rows


def render(events, step, path):
    start, end = window(events, step)
    rows = lanes(events, start, end)
    scale = (WIDTH - LEFT - 20) / (end - start)
    height = 60 + ROW * len(rows) + 70
    image = Image.new("RGB", (WIDTH, height), "white")
    draw, small, label_font = ImageDraw.Draw(image), font(11), font(13)
    draw.text((10, 10), f"hiapi timeline: one train step on every rank "
                        f"({(end - start) / 1000:.1f} ms)", fill="black", font=font(16))
    y = 40
    for label, row in rows:
        draw.text((10, y + 4), label, fill="black", font=label_font)
        for e in row:
            x0 = LEFT + max(e["ts"] - start, 0) * scale
            x1 = LEFT + min(e["ts"] + e["dur"] - start, end - start) * scale
            draw.rectangle([x0, y + 2, max(x1, x0 + 1), y + ROW - 2], fill=colour(e),
                           outline=(60, 60, 60) if x1 - x0 > 3 else None)
            text = e["name"]
            if draw.textlength(text, font=small) < x1 - x0 - 4:
                draw.text((x0 + 2, y + 5), text, fill="black", font=small)
        y += ROW
    for ms in range(0, int((end - start) / 1000) + 1, max(1, int((end - start) / 10000))):
        x = LEFT + ms * 1000 * scale
        draw.line([x, y, x, y + 6], fill="black")
        draw.text((x - 8, y + 8), f"{ms} ms", fill="black", font=small)
    legend = [("op (colour per op)", OP_COLOURS[0]), ("bucket start/wait", COLOURS["collective"]),
              ("compression", COLOURS["compression"]), ("exchange", COLOURS["exchange"]),
              ("fit span", COLOURS["fit"])]
    x = LEFT
    for text, fill in legend:
        draw.rectangle([x, y + 34, x + 14, y + 48], fill=fill)
        draw.text((x + 18, y + 34), text, fill="black", font=label_font)
        x += 40 + draw.textlength(text, font=label_font)
    image.save(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("png")
    parser.add_argument("--step", type=int, default=-1, help="train step index (-1: last)")
    args = parser.parse_args()
    with open(args.trace) as handle:
        render(json.load(handle)["traceEvents"], args.step, args.png)


if __name__ == "__main__":
    main()

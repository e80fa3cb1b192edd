# SPDX-License-Identifier: Apache-2.0
"""``quicoff ctl``: an operator's view of a running quicoff-dpdk over the host
interface (docs/host.md), with the requests any host may send (QUERY,
REMOVE; docs/protocol.md §4.7):

    quicoff ctl -i IFACE stats                 the offload table's counters
    quicoff ctl -i IFACE list [--indices 0-1023] [--direction tx|rx|both]
    quicoff ctl -i IFACE show tx 7             one entry's counters
    quicoff ctl -i IFACE remove tx 7           remove an entry

``--json`` prints one JSON object instead of text.  ``list`` asks for each
index of the range (a QUERY of the entry's counters, pipelined): protocol v1
has no request that enumerates the table, so entries outside the range are
not shown (the range is in the output).

Exit status: 0 done; 1 the offload refused (no such entry) or did not answer;
2 bad usage or the interface cannot be opened.
"""

from __future__ import annotations

import json
import select
import sys
from typing import Dict, List, Tuple

from . import host, wire

WINDOW = 64  #: QUERYs outstanding at once while listing


def _indices(spec: str) -> List[int]:
    out: List[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo, 0), int(hi or lo, 0)
        if not 0 <= a <= b < wire.INDEX_NONE:
            raise ValueError("bad index range %r" % part)
        out.extend(range(a, b + 1))
    return out


def add_arguments(p) -> None:
    p.add_argument("-i", "--iface", required=True, help="the host interface to the offload")
    p.add_argument("--offload-mac", default="ff:ff:ff:ff:ff:ff", help="the offload's host-port MAC")
    p.add_argument("--vlan", type=int, help="802.1Q TCI of the host link, if tagged")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--timeout", type=float, default=0.02, help="first wait for an answer, seconds (doubles)"
    )
    p.add_argument("--tries", type=int, default=6, help="frames per request at most")
    sub = p.add_subparsers(dest="ctl_command", metavar="ACTION", required=True)
    sub.add_parser("stats", help="the offload table's counters")
    lp = sub.add_parser("list", help="the entries of an index range, with their counters")
    lp.add_argument("--indices", default="0-1023", help="e.g. 0-1023 or 1,5,9-12")
    lp.add_argument("--direction", choices=("tx", "rx", "both"), default="both")
    for name, what in (("show", "one entry's counters"), ("remove", "remove an entry")):
        sp = sub.add_parser(name, help=what)
        sp.add_argument("direction", choices=("tx", "rx"))
        sp.add_argument("index", type=lambda s: int(s, 0))
    p.set_defaults(func=run)


def _list(port: host.OffloadPort, keys: List[Tuple[str, int]]) -> List[dict]:
    found: Dict[Tuple[str, int], dict] = {}
    failed: List[host.Reply] = []

    def done(r: host.Reply) -> None:
        if r.timed_out:
            failed.append(r)
        elif r.success and isinstance(r.msg, wire.Stats) and r.msg.conn is not None:
            found[(r.direction, r.index)] = dict(r.msg.conn)

    todo = list(keys)
    while todo or port.outstanding:
        while todo and port.outstanding < WINDOW:
            d, i = todo.pop(0)
            try:
                port.submit(wire.Query(index=i, direction=d, conn=True), done)
            except BlockingIOError:
                todo.insert(0, (d, i))
                break
        t = port.next_timeout()
        select.select([port.sock], [], [], 0.05 if t is None else min(t, 0.05))
        port.process()
    if failed:
        raise host.OffloadUnreachable(
            "%d of %d QUERYs got no answer (first: %s %d)"
            % (len(failed), len(keys), failed[0].direction, failed[0].index)
        )
    return [dict(direction=d, index=i, **found[(d, i)]) for d, i in keys if (d, i) in found]


def _print_counters(title: str, counters: dict) -> None:
    print(title)
    for k, v in counters.items():
        print("  %-24s %d" % (k, v))


def run(args) -> int:
    try:
        port = host.OffloadPort(
            args.iface,
            offload_mac=args.offload_mac,
            vlan=args.vlan,
            ack_timeout=args.timeout,
            max_tries=args.tries,
        )
    except (OSError, ValueError) as e:
        sys.stderr.write("quicoff ctl: cannot open %s: %s\n" % (args.iface, e))
        return 2
    out: dict
    try:
        with port:
            if args.ctl_command == "stats":
                out = {"table": port.stats()}
            elif args.ctl_command == "list":
                try:
                    idx = _indices(args.indices)
                except ValueError as e:
                    sys.stderr.write("quicoff ctl: %s\n" % e)
                    return 2
                dirs = ("tx", "rx") if args.direction == "both" else (args.direction,)
                entries = _list(port, [(d, i) for d in dirs for i in idx])
                out = {"indices": args.indices, "directions": list(dirs), "entries": entries}
            elif args.ctl_command == "show":
                r = port.query(args.index, args.direction)
                assert isinstance(r.msg, wire.Stats)
                out = {"direction": args.direction, "index": args.index, "conn": r.msg.conn}
            else:
                r = port.remove(args.index, args.direction)
                out = {
                    "direction": args.direction,
                    "index": args.index,
                    "removed": True,
                    "status": r.status,
                    "tries": r.tries,
                }
    except host.OffloadRefused as e:
        r = e.reply
        if args.json:
            print(json.dumps({"error": r.status, "direction": r.direction, "index": r.index}))
        else:
            sys.stderr.write("quicoff ctl: %s\n" % e)
        return 1
    except host.OffloadUnreachable as e:
        if args.json:
            print(json.dumps({"error": "unreachable", "detail": str(e)}))
        else:
            sys.stderr.write("quicoff ctl: the offload did not answer: %s\n" % e)
        return 1
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    if args.ctl_command == "stats":
        _print_counters("offload table", out["table"])
    elif args.ctl_command == "list":
        print(
            "%d entries (indices %s, %s)"
            % (len(out["entries"]), out["indices"], "+".join(out["directions"]))
        )
        print(
            "%-3s %10s %12s %14s %10s %6s %14s"
            % ("dir", "index", "packets", "bytes", "auth_fail", "gen", "largest_pn")
        )
        for e in out["entries"]:
            lp = e["largest_pn"]
            print(
                "%-3s %10d %12d %14d %10d %6d %14s"
                % (
                    e["direction"],
                    e["index"],
                    e["packets"],
                    e["bytes"],
                    e["auth_failures"],
                    e["key_generation"],
                    "-" if lp == wire.PN_NONE else str(lp),
                )
            )
    elif args.ctl_command == "show":
        _print_counters("%s entry %d" % (args.direction, args.index), out["conn"])
    else:
        print("removed %s entry %d" % (args.direction, args.index))
    return 0

"""The Markdown table printed at the end of a run (and pasted into docs/benchmark.md)."""

from __future__ import annotations

from typing import Any


def _size(threshold: int | None) -> str:
    if threshold is None:
        return "-"
    return f"{threshold >> 10} KB" if threshold < 1 << 20 else f"{threshold >> 20} MB"


def markdown(results: dict[str, Any]) -> str:
    s = results["settings"]
    lines = [f"N = {s['size']}, {results['machine']}, {results['date']}", ""]
    counts = sorted({r["reads"] for r in results["read"]})
    header = (
        "| series | threshold / chunk | write (s) | size (MB) | "
        + " | ".join(f"{c:,} reads (s)" for c in counts)
        + " |"
    )
    lines += [header, "|" + "---|" * (4 + len(counts))]
    write = {(r["series"], r["threshold"]): r["seconds"] for r in results["write"]}
    size = {(r["series"], r["threshold"]): r["bytes"] for r in results["size"]}
    reads: dict[tuple[str, int | None], dict[int, str]] = {}
    for r in results["read"]:
        mark = "" if r["measured_reads"] >= r["reads"] else f" (est. from {r['measured_reads']})"
        reads.setdefault((r["series"], r["threshold"]), {})[r["reads"]] = f"{r['seconds']:.4g}{mark}"
    keys = list(dict.fromkeys([*write, *reads]))
    for series, threshold in keys:
        base = series.split(" ds[")[0]
        w = write.get((base, threshold))
        z = size.get((base, threshold))
        cells = [reads.get((series, threshold), {}).get(c, "") for c in counts]
        w_cell = f"{w:.3f}" if w is not None and series == base else ""
        z_cell = f"{z / 1e6:.1f}" if z is not None and series == base else ""
        lines.append(f"| {series} | {_size(threshold)} | {w_cell} | {z_cell} | " + " | ".join(cells) + " |")
    p = results.get("paths")
    if p:
        lines += [
            "",
            (
                f"Random paths in a {p['plain_bytes'] / 1e6:.0f} MB JSON-like document"
                f" ({p['paths']} paths, mean depth {p['mean_depth']:.1f}):"
            ),
            "",
            "| figure | value |",
            "|---|---|",
            (
                "| msglc read of one random path, open reader, `cached=False`"
                f" | {p['msglc_seconds_per_path'] * 1e6:.1f} us |"
            ),
            f"| msglc open + first path (fresh reader) | {p['msglc_open_and_first_path_seconds'] * 1e3:.2f} ms |",
            (
                "| plain msgpack: read + decode the whole file (needed for any one value)"
                f" | {p['plain_decode_seconds'] * 1e3:.0f} ms |"
            ),
            f"| speed-up for one value | {p['plain_decode_seconds'] / p['msglc_open_and_first_path_seconds']:.0f}x |",
            f"| msglc dump of the document | {p['msglc_dump_seconds']:.2f} s |",
            f"| file size, archive / plain msgpack | {p['archive_bytes'] / p['plain_bytes']:.3f} |",
        ]
    lines += _records(results) + _bulk(results) + _slabs(results) + _scale(results)
    lines += realdata_table(results.get("realdata") or [])
    return "\n".join(lines)


def _records(results: dict[str, Any]) -> list[str]:
    rows = results.get("records") or []
    if not rows:
        return []
    whole = next(r["bytes"] for r in rows if "whole file zstd" in r["series"])
    lines = [
        "",
        f"{results['settings']['records']:,} JSON-like records (a list; one random record read with `cached=False`):",
        "",
        "| series | threshold | size (MB) | size / whole file zstd | dump (s) | one record (us) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        dump = f"{r['dump_seconds']:.3f}" if "dump_seconds" in r else ""
        read = f"{r['read_seconds'] * 1e6:.1f}" if "read_seconds" in r else ""
        lines.append(
            f"| {r['series']} | {_size(r['threshold'])} | {r['bytes'] / 1e6:.2f} | {r['bytes'] / whole:.2f} "
            f"| {dump} | {read} |"
        )
    return lines


def _bulk(results: dict[str, Any]) -> list[str]:
    rows = results.get("bulk") or []
    if not rows:
        return []
    lines = [
        "",
        f"Reading a {rows[0]['nbytes'] / 1e6:.0f} MB smooth float64 array whole (best of 3):",
        "",
        "| series | threads | file (MB) | seconds | MB/s |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        threads = "1 (h5py)" if r["threads"] is None else str(r["threads"])
        if not r.get("read_threads_applied", True):
            threads += " (no read_threads option: default)"
        lines.append(
            f"| {r['series']} | {threads} | {r['bytes'] / 1e6:.1f} | {r['seconds']:.3f} "
            f"| {r['nbytes'] / r['seconds'] / 1e6:.0f} |"
        )
    return lines


def _slabs(results: dict[str, Any]) -> list[str]:
    rows = results.get("slabs") or []
    if not rows:
        return []
    n, side = rows[0]["n"], rows[0]["side"]
    lines = [
        "",
        f"A random {side} x {side} block of a {n:,} x {n:,} float64 array of random floats "
        f"({rows[0]['chunk']} x {rows[0]['chunk']} tiles and chunks; best of 3 rounds of {rows[0]['blocks']:,}):",
        "",
        "| series | file (MB) | one block (us) |",
        "|---|---|---|",
    ]
    lines += [f"| {r['series']} | {r['bytes'] / 1e6:.1f} | {r['seconds'] * 1e6:.1f} |" for r in rows]
    return lines


def _scale(results: dict[str, Any]) -> list[str]:
    rows = results.get("scale") or []
    if not rows:
        return []
    lines = [
        "",
        f"sum(axis=0) of a {rows[0]['nbytes'] / 1e6:.0f} MB float64 array through Dask, chunks of "
        f"{rows[0]['chunk_rows']:,} rows (best of 3):",
        "",
        "| series | workers | seconds | MB/s | speed-up over 1 worker |",
        "|---|---|---|---|---|",
    ]
    one = {r["series"]: r["seconds"] for r in rows if r["workers"] == 1}
    for r in rows:
        speedup = f"{one[r['series']] / r['seconds']:.2f}" if r["series"] in one else ""
        lines.append(
            f"| {r['series']} | {r['workers']} | {r['seconds']:.3f} "
            f"| {r['nbytes'] / r['seconds'] / 1e6:.0f} | {speedup} |"
        )
    return lines


def realdata_table(measured: list[dict[str, Any]]) -> list[str]:
    """One line per dataset and series: sizes against the whole file by zstd -3, the open, one
    value (median and p90) and to_obj and dump against their floors (``python -m benchmark``
    and the realdata section of ``python -m benchmark.targets`` both print it)."""
    if not measured:
        return []
    lines = [
        "",
        "Real public JSON (`cached=False`; floors: the whole plain msgpack read and decoded, zstd -3 decompressed"
        " first for the compressed series; dumps against msgspec encode (+ zstd -3) + write):",
        "",
        "| dataset | series | size (MB) | size / whole file zstd -3 | open (ms) | open (KB) "
        "| one value median / p90 (us) | to_obj / floor | dump / floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in measured:
        whole, floors = m["zstd_bytes"], m["floors"]
        name = m["dataset"] + (" (quick)" if m["quick"] else "")
        blank = " |" * 5  # no open, read, to_obj or dump of these
        lines.append(
            f"| {name} | plain msgpack | {m['plain_bytes'] / 1e6:.2f} | {m['plain_bytes'] / whole:.2f} |{blank}"
        )
        lines.append(f"| {name} | whole file zstd -3 | {whole / 1e6:.2f} | 1 |{blank}")
        for s in m["series"]:
            z = s["compressed"]
            to_obj = s["to_obj_seconds"] / floors["decode_zstd" if z else "decode_plain"]
            dump = s["dump_seconds"] / floors["dump_zstd" if z else "dump_plain"]
            lines.append(
                f"| {name} | {s['series']} | {s['bytes'] / 1e6:.2f} | {s['bytes'] / whole:.2f} "
                f"| {s['open_seconds'] * 1e3:.2f} | {s['open_bytes'] / 1024:.1f} "
                f"| {s['read_median_seconds'] * 1e6:.1f} / {s['read_p90_seconds'] * 1e6:.1f} "
                f"| {to_obj:.2f} | {dump:.2f} |"
            )
    return lines

"""Number formats shared by the campaigns' tables and run ids, the report's charts, tables and the model's sentences:
one home, so one scale or size reads the same everywhere (the CLI's messages and the verifier's check texts too)."""

from __future__ import annotations

from bench.core.units import GiB, KiB, MiB

__all__ = ["fmt_bytes", "fmt_gb", "fmt_r2", "fmt_ratio", "fmt_scale", "fmt_seconds", "fmt_usd", "fmt_value",
           "fmt_bytes_against", "limit_bytes", "nbytes", "seconds"]


def seconds(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f} s"
    if v >= 10:
        return f"{v:.1f} s"
    return f"{v:.2f} s"


def nbytes(v: float) -> str:
    """A size in binary units, three significant digits: '512 B', '1.50 KiB', '95.4 MiB', '128 GiB'."""
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(v) >= div:
            x = v / div
            return f"{x:.2f} {unit}" if x < 10 else f"{x:.1f} {unit}" if x < 100 else f"{x:.0f} {unit}"
    return f"{v:.0f} B"


def fmt_usd(v: float | None) -> str:
    """3 decimals as published; smaller amounts keep 3 significant digits instead of showing $0.000."""
    if v is None:
        return "—"
    if v >= 0.01 or v == 0:
        return f"${v:,.3f}"
    return f"${v:.3g}" if v >= 1e-4 else f"${v:.2e}"


def fmt_bytes(v: float | None) -> str:
    """A size for people (`nbytes`), or '—' for none: the one formatter of sizes in docs, reports and messages."""
    return "—" if v is None else nbytes(float(v))


def fmt_bytes_against(stated: int, held: int) -> str:
    """Two sizes that should be equal, for people: 'X (manifests: Y, Z more)', the exact difference kept readable
    where the two round to the same size."""
    if stated == held:
        return fmt_bytes(stated)
    return (f"{fmt_bytes(stated)} (manifests: {fmt_bytes(held)}, {fmt_bytes(abs(held - stated))} "
            f"{'more' if held > stated else 'less'})")


def limit_bytes(text: str) -> str:
    """A limit read from a cgroup file ('25276502016', 'max'): a size for people, or the word as it is."""
    text = text.strip()
    return fmt_bytes(int(text)) if text.isdigit() else text or "unknown"


def fmt_seconds(v) -> str:
    return "—" if v is None else seconds(float(v))


def fmt_ratio(v) -> str:
    """A ratio of two times: 1.0 decimal from 10× up, else 2."""
    return "—" if v is None else f"{v:.1f}×" if v >= 10 else f"{v:.2f}×"


def fmt_value(v, none: str = "—") -> str:
    """A setting's value as written in a configuration: strings as they are, the rest as JSON."""
    import json

    return none if v is None else v if isinstance(v, str) else json.dumps(v)


def fmt_scale(v: float) -> str:
    """A scale factor in full, without trailing zeros ('0.00005', '0.5', '1'): in tables and in run ids."""
    return f"{v:.10f}".rstrip("0").rstrip(".")


def fmt_gb(v: float | None) -> str:
    """Input sizes in (decimal, logical) GB: 193 GB, 19.3 GB, 1.93 GB, 0.0193 GB."""
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:,.0f} GB"
    if v >= 10:
        return f"{v:.1f} GB"
    if v >= 1:
        return f"{v:.2f} GB"
    return f"{v:.3g} GB"


def fmt_r2(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"

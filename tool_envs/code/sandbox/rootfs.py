"""Build a sandbox root filesystem in a fresh mount namespace, enter it, exec the worker.

The namespaces level's stand-in for bubblewrap: ``unshare --mount --pid --net ...`` runs this
script as root in new namespaces; it applies the same plan bwrap gets
(:func:`tool_envs.code.sandbox.isolation.filesystem_plan`) with mount(2) on an empty tmpfs at
``new_root``, ``chroot``\\s into it and execs the worker. The host sees none of these mounts: they
live and die with the namespace.

Run as ``python -I -S rootfs.py SPEC_JSON`` with ``{"new_root", "plan": [[kind, path, source],
...], "exec": [argv...]}``; stdlib only, like the worker.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def raw(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if _LIBC.mount(raw(source), raw(target), raw(fstype), flags, raw(data) if data else None):
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _bind_readonly(root: str, source: str, path: str) -> None:
    target = _inside(root, path)
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "wb").close()
    _mount(source, target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _tmpfs(root: str, path: str, *, readonly: bool) -> None:
    target = _inside(root, path)
    os.makedirs(target, exist_ok=True)
    flags = MS_NOSUID | MS_NODEV | (MS_RDONLY if readonly else 0)
    _mount("tmpfs", target, "tmpfs", flags, "mode=0755" if readonly else "mode=1777")


def _dev(root: str, path: str) -> None:
    """A /dev with the harmless character devices only (bound from the host's)."""
    target = _inside(root, path)
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name in _DEVICES:
        if os.path.exists(f"/dev/{name}"):
            node = os.path.join(target, name)
            open(node, "wb").close()
            _mount(f"/dev/{name}", node, None, MS_BIND)
    for name, link in _DEV_LINKS.items():
        os.symlink(link, os.path.join(target, name))


def _proc(root: str, path: str) -> None:
    target = _inside(root, path)
    os.makedirs(target, exist_ok=True)
    _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def build(new_root: str, plan: list[list[str]]) -> None:
    """Apply the plan on a fresh tmpfs at ``new_root`` (in this mount namespace only)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for kind, path, source in plan:
        if kind == "ro-bind":
            _bind_readonly(new_root, source, path)
        elif kind == "symlink":
            os.symlink(source, _inside(new_root, path))
        elif kind in ("tmpfs", "hide"):
            _tmpfs(new_root, path, readonly=kind == "hide")
        elif kind == "dev":
            _dev(new_root, path)
        elif kind == "proc":
            _proc(new_root, path)
        else:
            raise ValueError(f"unknown mount kind {kind!r}")
    _mount(None, new_root, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def main() -> None:
    spec = json.loads(sys.argv[1])
    build(spec["new_root"], spec["plan"])
    os.chroot(spec["new_root"])
    os.chdir("/")
    os.execv(spec["exec"][0], spec["exec"])


if __name__ == "__main__":
    main()

"""A seccomp filter for one job: the system calls a job may not make.

Installed by each forked job child (sandbox._child_setup) after its own set-up
and before any of its code runs; inherited by nothing (a job cannot start a
process) and never lifted. What it refuses, with EPERM unless said:
- starting a process or a program: fork, vfork, clone without CLONE_THREAD
  (threads stay allowed), execve, execveat; clone3 gets ENOSYS so the C
  library falls back to clone, whose flags the filter can read;
- signalling any process but itself: kill / rt_sigqueueinfo to a pid other
  than its own or its own group (0; the job leads its own session),
  tgkill / rt_tgsigqueueinfo / tkill outside its own thread group, every
  pidfd call;
- reaching another process or the kernel: ptrace, process_vm_readv/writev,
  kcmp, mount and the new mount API, pivot_root, chroot, unshare, setns, bpf,
  perf_event_open, userfaultfd, keyctl, add_key, request_key, io_uring (it
  bypasses seccomp for the operations it queues), modules, kexec, reboot,
  swap, acct, the clock, quotactl, file handles, fanotify, ioperm/iopl;
- sockets other than AF_UNIX, and any way for a socket to reach an address:
  connect, bind, sendmsg, sendmmsg, sendto with an address (asyncio's
  self-pipe is a socketpair, which needs none of them; a daemon's socket
  file, /var/run/docker.sock say, stays connectable on a read-only mount);
- extended attributes and device nodes (mknod: FIFOs and devices);
- with `writes=False` (traced jobs, answers): opening a file for writing or
  creating one, and every call that changes a file's name, links, mode,
  owner, size or times. The sandbox's file system is read-only already; this
  closes its private /tmp too, so no job leaves anything for the next.
An architecture other than the one the filter was built for is killed.

Built with ctypes (standard library); installing it costs a few microseconds.
"""
from __future__ import annotations

import ctypes
import os
import struct

_X86_64 = {
    "open": 2, "openat": 257, "openat2": 437, "creat": 85, "unlink": 87, "unlinkat": 263, "rename": 82,
    "renameat": 264, "renameat2": 316, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "link": 86, "linkat": 265,
    "symlink": 88, "symlinkat": 266, "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
    "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260, "truncate": 76, "utime": 132, "utimes": 235,
    "utimensat": 280, "futimesat": 261, "mknod": 133, "mknodat": 259, "kill": 62, "tkill": 200,
    "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "clone": 56, "clone3": 435, "fork": 57,
    "vfork": 58, "execve": 59, "execveat": 322, "socket": 41, "ptrace": 101, "process_vm_readv": 310,
    "process_vm_writev": 311, "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308, "keyctl": 250,
    "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "settimeofday": 164, "clock_settime": 227,
    "clock_adjtime": 305, "adjtimex": 159, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_by_handle_at": 304, "name_to_handle_at": 303, "quotactl": 179,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "fanotify_init": 300, "move_mount": 429, "open_tree": 428, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "kcmp": 312, "iopl": 172,
    "ioperm": 173, "vhangup": 153, "process_madvise": 440,
    "connect": 42, "bind": 49, "sendto": 44, "sendmsg": 46, "sendmmsg": 307,
}
_AARCH64 = {
    "openat": 56, "openat2": 437, "unlinkat": 35, "renameat": 38, "renameat2": 276, "mkdirat": 34,
    "linkat": 37, "symlinkat": 36, "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55,
    "fchownat": 54, "truncate": 45, "utimensat": 88, "mknodat": 33, "kill": 129, "tkill": 130, "tgkill": 131,
    "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "clone": 220, "clone3": 435, "execve": 221,
    "execveat": 281, "socket": 198, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438, "mount": 40, "umount2": 39,
    "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268, "keyctl": 219, "add_key": 217,
    "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104,
    "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106, "reboot": 142,
    "swapon": 224, "swapoff": 225, "acct": 89, "settimeofday": 170, "clock_settime": 112,
    "clock_adjtime": 266, "adjtimex": 171, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_by_handle_at": 265, "name_to_handle_at": 264, "quotactl": 60,
    "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
    "fremovexattr": 16, "fanotify_init": 262, "move_mount": 429, "open_tree": 428, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "kcmp": 272, "vhangup": 58,
    "process_madvise": 440, "connect": 203, "bind": 200, "sendto": 206, "sendmsg": 211, "sendmmsg": 269,
}
# machine -> (AUDIT_ARCH, syscall table, open's flags argument index)
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

_DENY = ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
         "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "mount", "umount2", "pivot_root", "chroot", "unshare",
         "setns", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf",
         "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "io_uring_setup",
         "io_uring_enter", "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load",
         "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
         "clock_adjtime", "adjtimex", "quotactl", "open_by_handle_at", "name_to_handle_at", "fanotify_init",
         "iopl", "ioperm", "vhangup", "process_madvise", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
         "lremovexattr", "fremovexattr", "mknod", "mknodat", "connect", "bind", "sendmsg", "sendmmsg")
_DENY_WRITES = ("creat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir",
                "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown",
                "fchown", "lchown", "fchownat", "truncate", "utime", "utimes", "utimensat", "futimesat")

# BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h)
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_KILL = 0x80000000
_ERRNO = 0x00050000
_EPERM, _ENOSYS, _EACCES = 1, 38, 13
# seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (low word first on these little-endian machines)
_NR, _ARCH = 0, 4
_CLONE_THREAD = 0x00010000
_AF_UNIX = 1
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _arg(i: int) -> int:
    return 16 + 8 * i


class _Program:
    """A straight-line BPF program: each rule is a block that loads what it
    tests and returns, or falls through to the next rule."""

    def __init__(self):
        self.ins = []

    def op(self, code, k=0, jt=0, jf=0):
        self.ins.append((code, jt, jf, k))

    def syscall_block(self, nr, body):
        """if nr == `nr`: body (a list of instructions ending in returns)."""
        self.op(_LD_ABS, _NR)
        self.op(_JEQ, nr, 0, len(body))
        self.ins.extend(body)

    def pack(self) -> bytes:
        return b"".join(struct.pack("HBBI", *i) for i in self.ins)


def _ret(v):
    return (_RET, 0, 0, v)


def _if_arg_eq_allow(arg, values, deny):
    """Allows when the low 32 bits of `arg` equal one of `values`, else `deny`."""
    body = [(_LD_ABS, 0, 0, _arg(arg))]
    n = len(values)
    for j, v in enumerate(values):
        # jump to ALLOW (after the remaining tests and the deny) on a match
        body.append((_JEQ, n - j, 0, v & 0xFFFFFFFF))
    body.append(_ret(deny))
    body.append(_ret(_ALLOW))
    return body


def build(pid: int, writes: bool, machine: str = None) -> bytes:
    """The filter for a job whose pid (in its PID namespace) is `pid`.

    Short, because the kernel compiles it for every job: the refused calls
    are one comparison each against the number loaded once, all jumping to
    one EPERM; the calls whose arguments matter follow, one block each."""
    arch, table = _ARCHES[machine or os.uname().machine]
    p = _Program()
    # the architecture first: a syscall of another ABI has other numbers
    p.op(_LD_ABS, _ARCH)
    p.op(_JEQ, arch, 1, 0)
    p.op(_RET, _KILL)
    p.op(_LD_ABS, _NR)
    if arch == 0xC000003E:  # x32 system calls (bit 30) share the arch value
        p.op(_JGE, 0x40000000, 0, 1)
        p.op(_RET, _ERRNO | _EPERM)
    eperm = _ERRNO | _EPERM
    denied = [table[n] for n in _DENY + (() if writes else _DENY_WRITES) if n in table]
    for i, nr in enumerate(denied):
        p.op(_JEQ, nr, len(denied) - i, 0)  # to the RET EPERM after the JA
    p.op(0x05, 1)  # BPF_JMP | BPF_JA: past the shared return
    p.op(_RET, eperm)
    for name, errno in (("clone3", _ENOSYS), ("openat2", _ENOSYS)):
        p.op(_JEQ, table[name], 0, 1)
        p.op(_RET, _ERRNO | errno)
    # clone: threads only (flags are clone's first argument on both)
    p.syscall_block(table["clone"], [(_LD_ABS, 0, 0, _arg(0)), (_JSET, 1, 0, _CLONE_THREAD),
                                     _ret(eperm), _ret(_ALLOW)])
    for name in ("kill", "rt_sigqueueinfo"):
        p.syscall_block(table[name], _if_arg_eq_allow(0, [pid, 0], eperm))
    for name in ("tgkill", "rt_tgsigqueueinfo", "tkill"):
        p.syscall_block(table[name], _if_arg_eq_allow(0, [pid], eperm))
    p.syscall_block(table["socket"], _if_arg_eq_allow(0, [_AF_UNIX], _ERRNO | _EACCES))
    # send() on a socketpair is sendto with no address; an address names a
    # socket outside (a daemon's socket file is connectable on a read-only mount)
    p.syscall_block(table["sendto"], _if_arg_eq_allow(4, [0], eperm))
    if not writes:
        deny_open = [(_JSET, 0, 1, _WRITE_FLAGS), _ret(_ERRNO | _EACCES), _ret(_ALLOW)]
        if "open" in table:
            p.syscall_block(table["open"], [(_LD_ABS, 0, 0, _arg(1))] + deny_open)
        p.syscall_block(table["openat"], [(_LD_ABS, 0, 0, _arg(2))] + deny_open)
    p.op(_RET, _ALLOW)
    return p.pack()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_MODE_FILTER = 2

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _prctl = _libc.prctl
    _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
except (OSError, AttributeError):  # not Linux
    _prctl = None


def available() -> bool:
    return _prctl is not None and os.uname().machine in _ARCHES


# The pid the filter is built with, then patched to the job's in the child:
# a value no real pid has, so its places in the program are found by value.
_PID_MARK = 0x7FFFFFF7
_PROGRAMS = {}  # writes -> (buffer, sock_fprog, offsets of the pid's k fields)


def _program(writes: bool):
    """The filter built once per process (a child only patches its pid in)."""
    p = _PROGRAMS.get(writes)
    if p is None:
        prog = build(_PID_MARK, writes)
        offsets = [i * 8 + 4 for i in range(len(prog) // 8)
                   if struct.unpack_from("I", prog, i * 8 + 4)[0] == _PID_MARK]
        buf = ctypes.create_string_buffer(prog, len(prog))
        p = _PROGRAMS[writes] = (buf, _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p)), offsets)
    return p


def prepare() -> None:
    """Builds both filters now (the worker calls it before forking jobs)."""
    _program(True)
    _program(False)


def install(pid: int, writes: bool) -> None:
    """Installs the filter in this process (for good). Raises OSError."""
    buf, fprog, offsets = _program(writes)
    for off in offsets:
        struct.pack_into("I", buf, off, pid)
    if _prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def not_dumpable() -> None:
    """No process of the same user may read or write this one's memory
    (/proc/PID/mem, ptrace), nor can it dump core."""
    if _prctl is not None:
        _prctl(_PR_SET_DUMPABLE, 0, None, 0, 0)

"""The grading sandbox's seccomp filter: a Docker-like denylist, as a classic BPF program.

``scripts/grade.py`` hands :func:`program` to bubblewrap (``bwrap --seccomp FD``), which installs
it on the sandboxed notebook (after building the sandbox, before running it). The filter

* fails every system call of :data:`DENIED` with ``EPERM``: the calls Docker's default profile
  refuses a container without extra capabilities (kernel keyrings, BPF, ``perf_event_open``,
  ``io_uring``, ``userfaultfd``, ``ptrace`` and cross-process memory access, mounts and new
  namespaces, kernel modules and ``kexec``, clocks, swap, reboot, NUMA policy, ...), each of
  them kernel attack surface that a notebook computing with numpy never needs;
* fails ``clone`` with ``EPERM`` when its flags ask for a new namespace, and ``clone3`` (whose
  flags sit in memory a filter cannot read) with ``ENOSYS``, so that the C library falls back to
  ``clone``, as under Docker;
* fails every call made under another architecture's convention (x86-64's x32 numbers, i386's
  ``int 0x80``: the audit architecture is checked first) with ``EPERM``;
* allows everything else.

There is no ``libseccomp`` binding in the environment, so the program is assembled here
(``struct sock_filter``: 16-bit code, two 8-bit jump offsets, 32-bit constant, native byte
order) for x86-64 and aarch64; ``tests/test_grading.py`` checks the system call numbers against
the kernel's headers and that the calls fail inside the sandbox.
"""

from __future__ import annotations

import errno
import platform
import struct

# linux/audit.h: AUDIT_ARCH_X86_64 and AUDIT_ARCH_AARCH64 (EM_* | 64-bit | little-endian)
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000                 # x86-64's x32 ABI numbers
# linux/sched.h: the CLONE_NEW* flags (namespaces, in clone's first argument)
CLONE_NAMESPACES = (0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
                    | 0x10000000 | 0x20000000 | 0x40000000)

#: Refused with EPERM: name -> (x86-64 number, aarch64 number); None where the architecture
#: has no such call (aarch64 uses the generic table of asm-generic/unistd.h).
DENIED = {
    "acct": (163, 89), "add_key": (248, 217), "adjtimex": (159, 171), "bpf": (321, 280),
    "chroot": (161, 51), "clock_adjtime": (305, 266), "clock_settime": (227, 112),
    "create_module": (174, None), "delete_module": (176, 106),
    "fanotify_init": (300, 262), "finit_module": (313, 273), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fsopen": (430, 430), "fspick": (433, 433),
    "get_kernel_syms": (177, None), "get_mempolicy": (239, 236), "init_module": (175, 105),
    "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "io_uring_setup": (425, 425), "ioperm": (173, None), "iopl": (172, None),
    "kcmp": (312, 272), "kexec_file_load": (320, 294), "kexec_load": (246, 104),
    "keyctl": (250, 219), "lookup_dcookie": (212, 18), "mbind": (237, 235),
    "migrate_pages": (256, 238), "mount": (165, 40), "mount_setattr": (442, 442),
    "move_mount": (429, 429), "move_pages": (279, 239), "name_to_handle_at": (303, 264),
    "nfsservctl": (180, 42), "open_by_handle_at": (304, 265), "open_tree": (428, 428),
    "perf_event_open": (298, 241), "pidfd_getfd": (438, 438), "pivot_root": (155, 41),
    "process_madvise": (440, 440), "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271), "ptrace": (101, 117), "query_module": (178, None),
    "quotactl": (179, 60), "quotactl_fd": (443, 443), "reboot": (169, 142),
    "request_key": (249, 218), "set_mempolicy": (238, 237), "setdomainname": (171, 162),
    "sethostname": (170, 161), "setns": (308, 268), "settimeofday": (164, 170),
    "swapoff": (168, 225), "swapon": (167, 224), "_sysctl": (156, None), "sysfs": (139, None),
    "syslog": (103, 116), "umount2": (166, 39), "unshare": (272, 97), "uselib": (134, None),
    "userfaultfd": (323, 282), "ustat": (136, None), "vhangup": (153, 58),
}
CLONE = (56, 220)
CLONE3 = (435, 435)

# linux/filter.h and linux/seccomp.h
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16         # offsets in struct seccomp_data (args[0]'s low half, LE)


def machine() -> str:
    """This machine's architecture as :data:`AUDIT_ARCH` names it; raises when no filter is
    written for it."""
    name = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                       platform.machine().lower())
    if name not in AUDIT_ARCH:
        raise RuntimeError(f"no seccomp filter for architecture {platform.machine()!r} "
                           f"(expected one of {sorted(AUDIT_ARCH)})")
    return name


def _assemble(lines: list[tuple]) -> bytes:
    """``lines``: ``("label", name)`` marks a position; ``(code, k, jt, jf)`` an instruction
    whose jumps name labels (None: the next instruction)."""
    where, index = {}, 0
    for line in lines:
        if line[0] == "label":
            where[line[1]] = index
        else:
            index += 1
    out, index = [], 0
    for line in lines:
        if line[0] == "label":
            continue
        code, k, jt, jf = line
        offsets = [0 if target is None else where[target] - index - 1 for target in (jt, jf)]
        if not all(0 <= offset <= 255 for offset in offsets):
            raise ValueError(f"jump out of range at instruction {index}: {offsets}")
        out.append(struct.pack("=HBBI", code, *offsets, k))
        index += 1
    return b"".join(out)


def program(arch: str | None = None) -> bytes:
    """The filter for ``arch`` (default: this machine), ready for ``bwrap --seccomp FD``."""
    arch = arch or machine()
    if arch not in AUDIT_ARCH:
        raise ValueError(f"arch must be one of {sorted(AUDIT_ARCH)}, got {arch!r}")
    column = 0 if arch == "x86_64" else 1
    lines: list[tuple] = [(_LD_W_ABS, _ARCH, None, None),
                          (_JEQ, AUDIT_ARCH[arch], None, "deny"),
                          (_LD_W_ABS, _NR, None, None)]
    if arch == "x86_64":
        lines.append((_JGE, X32_SYSCALL_BIT, "deny", None))
    numbers = sorted({numbers[column] for numbers in DENIED.values()} - {None})
    lines += [(_JEQ, number, "deny", None) for number in numbers]
    lines += [(_JEQ, CLONE3[column], "enosys", None),
              (_JEQ, CLONE[column], None, "allow"),
              (_LD_W_ABS, _ARG0, None, None),
              (_JSET, CLONE_NAMESPACES, "deny", "allow"),
              ("label", "allow"), (_RET, _ALLOW, None, None),
              ("label", "deny"), (_RET, _ERRNO | errno.EPERM, None, None),
              ("label", "enosys"), (_RET, _ERRNO | errno.ENOSYS, None, None)]
    return _assemble(lines)

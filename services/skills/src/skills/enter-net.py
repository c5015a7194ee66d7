# Runs a command in the network namespace of a sandboxed process, without root.
#
# Usage: python3 enter-net.py <pid> <command> [args...]
#
# bubblewrap run by an unprivileged user makes the sandbox's network namespace inside a user
# namespace of its own, then nests a second user namespace for the command. Entering a network
# namespace needs CAP_SYS_ADMIN in the user namespace that owns it, so `nsenter -n` fails for
# anyone but root, and `nsenter -U -n` enters the nested namespace, which owns nothing. The owner
# is found with the NS_GET_USERNS ioctl on the network namespace itself. Our user created it, so
# joining it gives us that capability there (and nowhere else). Then the network namespace is
# joined and the command exec'd in place: same pid, and its argv is the command's own. The mount
# namespace stays the host's, so a unix socket the command binds lives in the host's filesystem.
# Node has no setns, hence this helper; the arguments come from run_service (integers and its own
# private folder), never from user text.
import ctypes
import fcntl
import os
import sys

NS_GET_USERNS = 0xB701
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def setns(libc, fd, kind, name):
    if libc.setns(fd, kind) != 0:
        err = ctypes.get_errno()
        sys.stderr.write(f"enter-net: joining the {name} namespace failed: {os.strerror(err)}\n")
        sys.exit(126)


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.stderr.write("usage: enter-net.py <pid> <command> [args...]\n")
        sys.exit(2)
    pid, argv = sys.argv[1], sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        owner = fcntl.ioctl(net, NS_GET_USERNS)
    except OSError as err:
        sys.stderr.write(f"enter-net: process {pid}: {err.strerror}\n")
        sys.exit(126)
    # A namespace owned by our own user namespace (root's sandboxes, or no user namespace at all)
    # is joined directly: setns refuses to re-enter the user namespace one is already in.
    if os.fstat(owner).st_ino != os.stat("/proc/self/ns/user").st_ino:
        setns(libc, owner, CLONE_NEWUSER, "user")
    setns(libc, net, CLONE_NEWNET, "network")
    os.close(owner)
    os.close(net)
    os.execvp(argv[0], argv)


main()

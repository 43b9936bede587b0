"""A message channel between the main process and one DataLoader worker: a Unix SOCK_SEQPACKET
socket pair, one packet per message, each with the file descriptors it needs (SCM_RIGHTS).

A message is one send and one receive, descriptors included, so a new shared-memory block
reaches the main process in the same step as the batch on it; nothing is created in the file
system. A payload too big for a packet travels in a shared-memory carrier whose descriptor
rides in the packet. When the other side dies its end closes and `recv` raises EOFError (forked
children close their copies of main ends, so only the main process holds one).
"""

from __future__ import annotations

import array
import os
import socket
import weakref

import numpy as np

from scriptc.multiprocessing.shared_memory import allocate, map_descriptor

__all__ = ["Channel", "channel_pair"]

_INLINE_LIMIT = 1 << 16  # payloads up to this travel in the packet itself
_FDS_PER_PACKET = 250  # the kernel passes at most 253 descriptors in one message
# Plain ints: the socket module's flags are enums, whose `|` costs microseconds per message.
_CLOEXEC = int(getattr(socket, "MSG_CMSG_CLOEXEC", 0))
_DONT_WAIT = int(socket.MSG_DONTWAIT)
_TRUNCATED = int(socket.MSG_TRUNC | socket.MSG_CTRUNC)
_ANCILLARY_SPACE = socket.CMSG_SPACE(_FDS_PER_PACKET * 4)
# The first byte of a packet says what it holds.
_INLINE, _CARRIED, _DESCRIPTORS_ONLY = b"\x00", b"\x01", b"\x02"


class Channel:
    """One end of a channel_pair."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def fileno(self) -> int:
        """For selectors and multiprocessing.connection.wait: readable when a message (or EOF) is there."""
        return self.sock.fileno()

    def send(self, payload: bytes, fds: list[int] = ()) -> None:
        """Send payload with duplicates of fds (the caller still owns and closes its own)."""
        fds = list(fds)
        carrier = None
        if len(payload) > _INLINE_LIMIT:
            carrier = allocate(len(payload))
            carrier.array()[:len(payload)] = np.frombuffer(payload, np.uint8)
            packet, fds = _CARRIED + len(payload).to_bytes(8, "little"), fds + [carrier.fd]
        else:
            packet = _INLINE + payload
        while len(fds) > _FDS_PER_PACKET:
            self._send_packet(_DESCRIPTORS_ONLY, fds[:_FDS_PER_PACKET])
            fds = fds[_FDS_PER_PACKET:]
        self._send_packet(packet, fds)

    def _send_packet(self, packet: bytes, fds: list[int]) -> None:
        if fds:
            self.sock.sendmsg([packet], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            self.sock.send(packet)

    def recv(self, block: bool = True) -> tuple[bytes, list[int]] | None:
        """The next message and the descriptors that came with it (now the caller's to close);
        None when block is False and no message is waiting. EOFError when the other end closed."""
        fds: list[int] = []
        try:
            packet = self._recv_packet(fds, 0 if block else _DONT_WAIT)
            if packet is None:
                return None
            while packet[:1] == _DESCRIPTORS_ONLY:  # the rest of this message follows at once
                packet = self._recv_packet(fds, 0)
            if packet[:1] == _INLINE:
                return packet[1:], fds
            length = int.from_bytes(packet[1:9], "little")
            carrier = map_descriptor(fds.pop(), length, keep_fd=False)
            return carrier.array()[:length].tobytes(), fds
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    def _recv_packet(self, fds: list[int], flags: int) -> bytes | None:
        try:
            packet, ancillary, flags, _ = self.sock.recvmsg(_INLINE_LIMIT + 1, _ANCILLARY_SPACE, _CLOEXEC | flags)
        except BlockingIOError:
            return None
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(data[:len(data) - len(data) % received.itemsize])
                fds.extend(received)
        if not packet:
            raise EOFError("the other end of the DataLoader channel closed")
        if flags & _TRUNCATED:
            raise RuntimeError("a DataLoader channel message arrived truncated")
        return packet

    def close(self) -> None:
        self.sock.close()


# The main ends of live channels. A process forked from this one (a worker, or any other child)
# closes its copies at once: a worker then sees EOF as soon as the main process dies, because no
# other process holds the main end of its channel open.
_main_ends: weakref.WeakSet = weakref.WeakSet()


def _close_inherited_main_ends() -> None:
    for channel in list(_main_ends):
        channel.close()


os.register_at_fork(after_in_child=_close_inherited_main_ends)


def channel_pair() -> tuple[Channel, Channel]:
    """(main end, worker end) of a new channel."""
    main_sock, worker_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    main_end = Channel(main_sock)
    _main_ends.add(main_end)
    return main_end, Channel(worker_sock)

"""One TCP transfer between the emulated sites, to see the window limit of a long path.

  server ADDRESS PORT              accept one connection, read to EOF, reply with the byte count
  client ADDRESS PORT MEGABYTES    send that much, wait for the reply, print the throughput

The client prints "tcp: <bytes> bytes in <s> s = <Mbit/s> Mbit/s"; the time runs from the
first byte sent to the server's reply (one round trip more than the data alone needs). Bounded:
every socket operation has a timeout. Only the address given (inside our namespaces) is used.
"""
import socket
import sys
import time

TIMEOUT_S = 60


def server(address, port):
    with socket.create_server((address, port)) as listener:
        listener.settimeout(TIMEOUT_S)
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(TIMEOUT_S)
            total = 0
            while chunk := connection.recv(1 << 20):
                total += len(chunk)
            connection.sendall(str(total).encode())


def client(address, port, megabytes):
    payload = b"\0" * (1 << 20)
    deadline = time.monotonic() + 10
    while True:  # the server may still be starting
        try:
            connection = socket.create_connection((address, port), timeout=TIMEOUT_S)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with connection:
        start = time.monotonic()
        for _ in range(megabytes):
            connection.sendall(payload)
        connection.shutdown(socket.SHUT_WR)
        reply = connection.recv(64)
        elapsed = time.monotonic() - start
    sent = megabytes << 20
    if int(reply or b"-1") != sent:
        sys.exit(f"tcp: server received {reply!r} bytes, {sent} sent")
    print(f"tcp: {sent} bytes in {elapsed:.3f} s = {sent * 8 / elapsed / 1e6:.1f} Mbit/s")


if __name__ == "__main__":
    if sys.argv[1:2] == ["server"] and len(sys.argv) == 4:
        server(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["client"] and len(sys.argv) == 5:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)

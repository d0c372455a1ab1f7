"""Build the `qemu` provider's small test VM: a Debian kernel and an initramfs whose `/init` brings up virtio-net
and serves a guest server of Conway's own writing on port 5000 (a shell HTTP handler behind busybox `nc`). It
speaks the part of OSWorld's guest protocol the provider's test uses: /screenshot (a fixed PNG), /screen_size,
/terminal, /accessibility, /execute and /setup/execute for shell commands (and the platform query). It proves the
QEMU plumbing (boot, port forward, readiness, a task through the protocol, teardown), not the protocol: the
recordings of OSWorld's own server do that (scripts/build/record_osworld_guest.py).

    python -m scripts.build.build_qemu_test_image OUT_DIR [--from-debs DIR]

Sources: the installed `linux-image-cloud-amd64` and `busybox-static` (scripts/test.sh installs them), or their
.deb files in DIR (`apt-get download linux-image-6.1.0-…-cloud-amd64 busybox-static`). Nothing is downloaded
here. Writes OUT_DIR/vmlinuz, OUT_DIR/initrd.img and OUT_DIR/disk.qcow2 (an empty disk: the provider boots an
image; this VM's system is all in its initramfs).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULES = ("virtio", "virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci", "failover",
           "net_failover", "virtio_net")
"""What virtio-net needs from a Debian cloud kernel (built as modules there), loaded twice over at boot so that
their order does not matter."""

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
for m in {modules}; do insmod /lib/modules/$m.ko 2>/dev/null; done
for m in {modules}; do grep -q "^$m " /proc/modules || insmod /lib/modules/$m.ko; done
ip link set lo up; ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0; ip route add default via 10.0.2.2
mkdir -p /home/user
echo "conway test guest: serving on port 5000" > /dev/console
exec nc -ll -p 5000 -e /guest-server
"""

SERVER = r"""#!/bin/sh
# One HTTP request on stdin, its answer on stdout (busybox nc runs this per connection).
read -r method path proto
len=0
while read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
  case "$line" in [Cc]ontent-[Ll]ength:*) len=${line#*: } ;; esac
done
body=""
[ "$len" -gt 0 ] && body=$(head -c "$len")
t=/tmp/answer.$$
esc() { tr '\t' ' ' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g'; }
reply() {
  printf 'HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' "$1" "$2" "$(wc -c < "$3")"
  cat "$3"
}
case "$method $path" in
  "GET /screenshot") reply "200 OK" image/png /screen.png ;;
  "POST /screen_size") printf '{"width": 1280, "height": 800}' > $t; reply "200 OK" application/json $t ;;
  "GET /terminal") printf '{"output": null, "status": "success"}' > $t; reply "200 OK" application/json $t ;;
  "GET /accessibility") printf '{"AT": "<desktop-frame/>"}' > $t; reply "200 OK" application/json $t ;;
  "POST /execute"|"POST /setup/execute")
    case "$body" in
      *'platform.system()'*) printf '%s\n' "$(uname -s)" > $t.o; : > $t.e; rc=0 ;;
      *'"shell": true'*)
        cmd=$(printf '%s' "$body" | sed -e 's/^.*"command": "//' -e 's/", "shell": true.*$//' \
              -e 's/\\"/"/g' -e 's/\\\\/\\/g')
        (cd /home/user && HOME=/home/user sh -c "$cmd") > $t.o 2> $t.e; rc=$? ;;
      *) printf '{"status": "error", "message": "this guest runs shell commands only"}' > $t
         reply "500 INTERNAL SERVER ERROR" application/json $t; rm -f $t; exit 0 ;;
    esac
    printf '{"status": "success", "output": "%s", "error": "%s", "returncode": %d}' \
      "$(esc < $t.o)" "$(esc < $t.e)" "$rc" > $t
    reply "200 OK" application/json $t ;;
  *) printf 'Not Found' > $t; reply "404 NOT FOUND" text/html $t ;;
esac
rm -f $t $t.o $t.e
"""


def _cpio(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A newc cpio archive of (name, mode, data) (directories with empty data)."""
    out = io.BytesIO()
    for ino, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], 1):
        raw = name.encode() + b"\0"
        head = "070701" + "".join(f"{v:08X}" for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0))
        out.write(head.encode() + raw)
        out.write(b"\0" * (-(110 + len(raw)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))
    return out.getvalue()


def _sources(from_debs: Path | None, work: Path) -> tuple[Path, Path, Path]:
    """(kernel, its modules folder, busybox)."""
    root = Path("/")
    if from_debs is not None:
        root = work / "root"
        for deb in sorted(from_debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    kernels = sorted((root / "boot").glob("vmlinuz-*-cloud-amd64"))
    if not kernels:
        raise SystemExit(f"no Debian cloud kernel under {root / 'boot'} (apt-get install linux-image-cloud-amd64)")
    kernel = kernels[-1]
    modules = root / "lib" / "modules" / kernel.name.removeprefix("vmlinuz-")
    busybox = next((p for p in (root / "bin" / "busybox", root / "usr" / "bin" / "busybox") if p.is_file()), None)
    if busybox is None or not modules.is_dir():
        raise SystemExit("busybox-static or the kernel's modules are missing (apt-get install busybox-static)")
    return kernel, modules, busybox


def _screen_png() -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (1280, 800), (40, 60, 90))
    ImageDraw.Draw(img).text((40, 40), "conway qemu test guest", fill=(255, 255, 255))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def build(out: Path, from_debs: Path | None = None) -> dict[str, object]:
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="conway-qemu-image-") as tmp:
        kernel, modules, busybox = _sources(from_debs, Path(tmp))
        shutil.copyfile(kernel, out / "vmlinuz")
        found = {p.stem: p for p in modules.rglob("*.ko") if p.stem in MODULES}
        missing = [m for m in MODULES if m not in found]
        if missing:
            raise SystemExit(f"the kernel's modules lack {', '.join(missing)}")
        dirs = 0o040755
        entries: list[tuple[str, int, bytes]] = [(d, dirs, b"") for d in
                                                 ("bin", "dev", "proc", "sys", "tmp", "home", "lib", "lib/modules")]
        entries += [("bin/busybox", 0o100755, busybox.read_bytes()),
                    ("init", 0o100755, INIT.format(modules=" ".join(MODULES)).encode()),
                    ("guest-server", 0o100755, SERVER.encode()), ("screen.png", 0o100644, _screen_png())]
        entries += [(f"lib/modules/{m}.ko", 0o100644, found[m].read_bytes()) for m in MODULES]
        (out / "initrd.img").write_bytes(gzip.compress(_cpio(entries), 6))
    disk = out / "disk.qcow2"
    disk.unlink(missing_ok=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(disk), "16M"], check=True)
    figures = {"kernel": kernel.name, "initrd_bytes": (out / "initrd.img").stat().st_size,
               "build_s": round(time.monotonic() - started, 2)}
    (out / "image.json").write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--from-debs", type=Path, help="a folder of the two .deb files (else the installed packages)")
    args = ap.parse_args(argv)
    print(json.dumps(build(Path(args.out), args.from_debs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

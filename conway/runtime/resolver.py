"""Will this GGUF model fit here? Metadata from the `gguf` package, memory from the host.

The estimate (labelled as one everywhere it is shown) adds:

* weights: the model file's tensor bytes (sizes from the gguf package's quantization table);
* the vision projector (mmproj) file's tensor bytes;
* KV cache for the context: layers x context x (K + V heads x head size) in
  f16 — an upper bound for sliding-window models (llama.cpp keeps only the
  window for their local layers);
* compute buffers and runtime overhead: 10% of weights + projector, plus
  256 MiB.

It is compared with available RAM, or with free memory on one NVIDIA GPU
(`nvidia-smi`) when layers are offloaded (a unified-memory budget on Apple
Silicon), keeping headroom: the larger of `runtime.headroom_gib` and 10% of
what is available. A model that does not fit is refused with the numbers.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conway.errors import UserError

__all__ = [
    "GGUFInfo",
    "read_gguf",
    "check_gguf_path",
    "MemoryEstimate",
    "Available",
    "estimate_memory",
    "available_memory",
    "gpu_free_memory",
    "check_fit",
    "resolve_local_model",
    "VISION_TEXT_ARCHS",
    "gib",
]

GIB = 1024**3
MIB = 1024**2
OVERHEAD_FRACTION = 0.10
OVERHEAD_FIXED = 256 * MIB
HEADROOM_FRACTION = 0.10

VISION_TEXT_ARCHS = frozenset({"qwen2vl", "qwen25vl", "qwen3vl", "qwen3vlmoe", "glm4v", "glm4v_moe",
                               "mllama", "pixtral", "llama4", "kimivl", "cogvlm", "minicpmv"})
"""Text architectures that only come as vision-language models (an mmproj is needed)."""


def gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


@dataclass
class GGUFInfo:
    path: str
    file_bytes: int
    tensor_bytes: int
    arch: str
    kind: str
    """`model`, or `mmproj` for a vision projector."""
    name: str | None = None
    n_layer: int | None = None
    n_embd: int | None = None
    n_head: int | None = None
    n_head_kv: list[int] = field(default_factory=list)
    """KV heads per layer (one value repeated when the model states a single number)."""
    key_length: int | None = None
    value_length: int | None = None
    context_length: int | None = None
    sliding_window: int | None = None
    has_chat_template: bool = False
    has_vision: bool = False
    """A projector with a vision encoder (mmproj files)."""

    @property
    def is_projector(self) -> bool:
        return self.kind == "mmproj" or self.arch == "clip"

    def kv_bytes_per_token(self, bytes_per_elem: int = 2) -> int | None:
        """K + V bytes one token costs across all layers (f16 by default); None when unknown."""
        if not self.n_layer or not self.n_head:
            return None
        head_dim = (self.n_embd // self.n_head) if self.n_embd else None
        k = self.key_length or head_dim
        v = self.value_length or head_dim
        if not k or not v:
            return None
        heads = self.n_head_kv or [self.n_head] * self.n_layer
        if len(heads) < self.n_layer:
            heads = heads + [heads[-1]] * (self.n_layer - len(heads))
        return sum(h * (k + v) for h in heads[: self.n_layer]) * bytes_per_elem

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [], False)}


def check_gguf_path(path: str | Path, what: str = "model") -> Path:
    """The path, if it exists and starts with the GGUF magic; else UserError saying which."""
    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"{what} file {p} does not exist")
    if p.is_dir():
        ggufs = sorted(x.name for x in p.glob("*.gguf"))[:8]
        hint = f" (it holds: {', '.join(ggufs)})" if ggufs else ""
        raise UserError(f"{what} path {p} is a directory, not a GGUF file{hint}")
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise UserError(f"cannot read {what} file {p}: {exc.strerror}") from None
    if magic != b"GGUF":
        raise UserError(f"{what} file {p} is not a GGUF file (it starts with {magic!r}, not b'GGUF'); "
                        "llama.cpp needs a .gguf model (convert with llama.cpp's convert_hf_to_gguf.py)")
    return p


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_KEEP_ARRAY_ITEMS = 4096
"""Arrays longer than this (tokenizer vocabularies) are skipped, not decoded."""


class _Scanner:
    """Reads GGUF metadata straight from a memory map, skipping big arrays (GGUFReader decodes every
    vocabulary entry: a minute for a 262k-token model on a busy machine; this takes well under a second)."""

    def __init__(self, buf: Any):
        self.buf = buf
        self.pos = 0

    def unpack(self, fmt: str) -> Any:
        import struct

        v = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self) -> str:
        n = self.unpack("<Q")
        if n > len(self.buf) - self.pos:
            raise ValueError(f"string of {n} bytes runs past the end of the file")
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def value(self, vtype: int) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype = self.unpack("<I")
            count = self.unpack("<Q")
            if count > _KEEP_ARRAY_ITEMS:
                self.skip_array(etype, count)
                return None
            return [self.value(etype) for _ in range(count)]
        raise ValueError(f"unknown GGUF value type {vtype}")

    def skip_array(self, etype: int, count: int) -> None:
        import struct

        if etype in _SCALARS:
            self.pos += struct.calcsize(_SCALARS[etype]) * count
        elif etype == _STRING:
            unpack = struct.Struct("<Q").unpack_from
            buf, pos = self.buf, self.pos
            for _ in range(count):
                pos += 8 + unpack(buf, pos)[0]
            self.pos = pos
        else:
            for _ in range(count):
                self.value(etype)
        if self.pos > len(self.buf):
            raise ValueError("array runs past the end of the file")


def _scan(path: Path) -> tuple[dict[str, Any], int]:
    """(metadata, tensor bytes) of a GGUF file; tensor sizes use the gguf package's quant table."""
    import mmap

    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sc = _Scanner(mm)
        if sc.unpack("<4s") != b"GGUF":
            raise ValueError("bad magic")
        version = sc.unpack("<I")
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        n_tensors = sc.unpack("<Q")
        n_kv = sc.unpack("<Q")
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = sc.string()
            meta[key] = sc.value(sc.unpack("<I"))
        total = 0
        for _ in range(n_tensors):
            sc.string()
            dims = [sc.unpack("<Q") for _ in range(sc.unpack("<I"))]
            qtype = sc.unpack("<I")
            sc.unpack("<Q")  # offset
            n = 1
            for d in dims:
                n *= d
            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(qtype)]
            total += n // block * size
    return meta, total


def gguf_metadata(path: str | Path) -> dict[str, Any]:
    """A GGUF file's metadata keys (large arrays skipped); errors as raised (the caller says what it means)."""
    return _scan(Path(path))[0]


def read_gguf(path: str | Path, what: str = "model") -> GGUFInfo:
    """Metadata of a GGUF file (UserError for a missing, non-GGUF or corrupt file)."""
    p = check_gguf_path(path, what)
    try:
        import gguf  # noqa: F401
    except ImportError:
        raise UserError("reading GGUF metadata needs the `gguf` package: pip install -e '.[llama]'") from None
    try:
        meta, tensor_bytes = _scan(p)
    except Exception as exc:
        raise UserError(f"{what} file {p} looks like GGUF but cannot be read: {type(exc).__name__}: {exc}") from None
    arch = str(meta.get("general.architecture") or "unknown")
    kind = str(meta.get("general.type") or ("mmproj" if arch == "clip" else "model"))

    def num(key: str) -> int | None:
        v = meta.get(f"{arch}.{key}")
        if isinstance(v, list):
            v = max(v) if v else None
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    heads_kv = meta.get(f"{arch}.attention.head_count_kv")
    n_layer = num("block_count")
    if isinstance(heads_kv, list):
        kv_list = [int(h) for h in heads_kv]
    elif isinstance(heads_kv, (int, float)):
        kv_list = [int(heads_kv)] * (n_layer or 1)
    else:
        kv_list = []
    name = meta.get("general.name")
    return GGUFInfo(
        path=str(p), file_bytes=p.stat().st_size, tensor_bytes=tensor_bytes, arch=arch, kind=kind,
        name=name if isinstance(name, str) else None, n_layer=n_layer, n_embd=num("embedding_length"),
        n_head=num("attention.head_count"), n_head_kv=kv_list, key_length=num("attention.key_length"),
        value_length=num("attention.value_length"), context_length=num("context_length"),
        sliding_window=num("attention.sliding_window"),
        has_chat_template=isinstance(meta.get("tokenizer.chat_template"), str),
        has_vision=bool(meta.get("clip.has_vision_encoder")) or kind == "mmproj",
    )


# --- memory -----------------------------------------------------------------------


@dataclass
class MemoryEstimate:
    weights: int
    projector: int
    kv_cache: int
    overhead: int
    n_ctx: int
    kv_note: str = ""

    @property
    def total(self) -> int:
        return self.weights + self.projector + self.kv_cache + self.overhead

    def describe(self) -> str:
        proj = f" + projector {gib(self.projector)}" if self.projector else ""
        return (f"{gib(self.total)} (weights {gib(self.weights)}{proj} + KV cache {gib(self.kv_cache)} for "
                f"{self.n_ctx} tokens{self.kv_note} + overhead {gib(self.overhead)})")


@dataclass
class Available:
    bytes: int
    where: str
    """`RAM`, `GPU 0 (NAME)`, `unified memory` …"""


def held_n_ctx(n_ctx: int, trained: int | None, slots: int = 1) -> int:
    """runtime.n_ctx as llama.cpp is given it: no slot past the context the model was trained for (GGUF
    `context_length`), whose KV cache no request could use."""
    return min(n_ctx, trained * slots) if trained else n_ctx


def estimate_memory(model: GGUFInfo, projector: GGUFInfo | None, n_ctx: int, slots: int = 1) -> MemoryEstimate:
    """Weights, projector and the KV cache of `n_ctx` tokens as loaded (held to the trained context)."""
    held = held_n_ctx(n_ctx, model.context_length, slots)
    note = f" (runtime.n_ctx {n_ctx} held to the trained context)" if held < n_ctx else ""
    n_ctx, per_token = held, model.kv_bytes_per_token()
    if per_token is None:
        per_token = 0
        note += ", unknown for this architecture"
    elif model.sliding_window:
        note += ", upper bound (sliding-window layers need less)"
    proj = projector.tensor_bytes if projector else 0
    overhead = int((model.tensor_bytes + proj) * OVERHEAD_FRACTION) + OVERHEAD_FIXED
    return MemoryEstimate(weights=model.tensor_bytes, projector=proj, kv_cache=per_token * n_ctx,
                          overhead=overhead, n_ctx=n_ctx, kv_note=note)


def gpu_free_memory() -> Available | None:
    """Free memory of the NVIDIA GPU with the most of it (nvidia-smi), or None."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=index,name,memory.free", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    best: Available | None = None
    for line in out.strip().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) < 3:
            continue
        try:
            free = int(float(parts[2])) * MIB
        except ValueError:
            continue
        if best is None or free > best.bytes:
            best = Available(free, f"GPU {parts[0]} ({parts[1]}) free memory")
    return best


def available_memory(n_gpu_layers: int = 0) -> Available:
    """Where the model would live: one NVIDIA GPU when layers are offloaded, else RAM."""
    import psutil

    if n_gpu_layers != 0:
        gpu = gpu_free_memory()
        if gpu is not None:
            return gpu
    ram = psutil.virtual_memory().available
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return Available(ram, "unified memory (available)")
    return Available(ram, "available RAM")


def check_fit(estimate: MemoryEstimate, available: Available, headroom_gib: float, what: str) -> str:
    """A one-line verdict when it fits; UserError with the numbers when it does not."""
    headroom = max(int(headroom_gib * GIB), int(available.bytes * HEADROOM_FRACTION))
    if estimate.total + headroom > available.bytes:
        raise UserError(
            f"{what} will not fit: it needs an estimated {estimate.describe()}, but {gib(available.bytes)} of "
            f"{available.where} is there and {gib(headroom)} is kept as headroom. These are estimates from the "
            "GGUF metadata. Lower runtime.n_ctx, use a smaller quantization, or set runtime.check_memory=false "
            "to try anyway.")
    return (f"estimated {estimate.describe()}; {gib(available.bytes)} of {available.where}, "
            f"{gib(headroom)} headroom kept (estimates)")


@dataclass
class LocalModel:
    model: GGUFInfo
    projector: GGUFInfo | None
    estimate: MemoryEstimate
    verdict: str


def resolve_local_model(model_path: str | None, mmproj_path: str | None, *, n_ctx: int, n_gpu_layers: int,
                        headroom_gib: float, check_memory: bool = True, need_vision: bool = True,
                        slots: int = 1) -> LocalModel:
    """Validate a local model (+ projector) and check that it fits; UserError says what is wrong."""
    if not model_path:
        raise UserError("no local model given: set policy.model_path to a GGUF file (and policy.mmproj_path "
                        "to its vision projector), or give --endpoint URL of a running server")
    model = read_gguf(model_path, "model")
    if model.is_projector:
        raise UserError(f"{model.path} is a vision projector (mmproj), not a model: set it as policy.mmproj_path "
                        "and policy.model_path to the language model GGUF")
    projector = None
    if mmproj_path:
        projector = read_gguf(mmproj_path, "mmproj")
        if not projector.is_projector:
            raise UserError(f"{projector.path} is not a vision projector (its general.type is {projector.kind!r}, "
                            f"architecture {projector.arch!r}); policy.mmproj_path needs the mmproj GGUF")
    elif need_vision:
        candidates = sorted(str(p.name) for p in Path(model.path).parent.glob("*mmproj*.gguf"))[:5]
        hint = f" Candidates beside the model: {', '.join(candidates)}." if candidates else ""
        if model.arch in VISION_TEXT_ARCHS:
            raise UserError(f"{model.path} is a vision-language model ({model.arch}) but no mmproj was given: set "
                            f"policy.mmproj_path to its vision projector GGUF (usually mmproj-*.gguf).{hint}")
        raise UserError(f"Conway's policies look at screenshots, and {model.path} ({model.arch}) comes without a "
                        f"vision projector: set policy.mmproj_path to its mmproj GGUF.{hint}")
    estimate = estimate_memory(model, projector, n_ctx, slots)
    where = available_memory(n_gpu_layers)
    label = f"model {Path(model.path).name}" + (f" + {Path(projector.path).name}" if projector else "")
    if check_memory:
        verdict = check_fit(estimate, where, headroom_gib, label)
    else:
        verdict = f"memory check skipped (runtime.check_memory=false); estimated {estimate.describe()}"
    return LocalModel(model, projector, estimate, verdict)

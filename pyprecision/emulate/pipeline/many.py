"""Many flag sets on one HLO module and one set of inputs, sharing the work (issue 27): the module
is parsed (by the caller), taken through the HLO passes and bound to the inputs once; flag sets whose
precision passes produce the same loop IR are emulated once (decision V22).

This is the engine of ``verify``'s diagnosis and of anything else that searches over flags: give
it the configs, get one :class:`FlagSetRun` per config, in order.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision import hlo, ir, lower
from pyprecision.emulate.pipeline.bind import bind_arguments
from pyprecision.emulate.pipeline.driver import (
    DEFAULT_HLO_PASSES,
    CompiledHlo,
    relabelled_constants,
    run_compiled,
)
from pyprecision.emulate.pipeline.forked import can_fork, forked
from pyprecision.emulate.pipeline.memo import DEFAULT_MEMO_BYTES, ValueMemo
from pyprecision.errors import EmulationError, LoweringError, PassError, VerifyError
from pyprecision.frontend import PrecisionConfig
from pyprecision.kernel import default_threads, thread_limit
from pyprecision.passes import pipeline_key, run_pipeline, verify_pipeline_result

__all__ = ["FlagSetRun", "FlagSetRunner", "Program", "SharedRuns", "run_flag_sets"]

#: what one flag set may fail with without stopping the others
SET_ERRORS: tuple[type[Exception], ...] = (EmulationError, LoweringError, PassError,
                                               VerifyError)  # fmt: skip


@dataclass
class FlagSetRun:
    """One config's result: the outputs in HLO result order (None with ``error``), the index of
    the earlier config whose identical IR was emulated for it (``same_as``), and the precision
    passes that changed the program."""

    config: PrecisionConfig
    outputs: list[np.ndarray] | None
    error: str | None = None
    same_as: int | None = None
    changed: list[str] = field(default_factory=list)


@dataclass
class SharedRuns:
    """Every config's run, the input arrays no parameter took, and what was shared: how many
    lowerings and emulations were done for ``len(runs)`` configs."""

    runs: list[FlagSetRun]
    unused_inputs: list[str]
    lowerings: int
    emulations: int


def _ir_key(module: ir.Module, digests: dict[int, tuple[Any, bytes]] | None = None,
            texts: dict[int, str] | None = None, known: dict[int, str] | None = None) -> bytes:
    """A digest of the program, with the ``narrow_acc`` flags that change nothing left out: equal
    digests, equal programs (decision V22). It reads what the printed IR says — every tensor
    (constants' bytes included) and every instruction — but digests a constant's bytes once per
    array (``digests``: ``id`` → (the array, kept alive; its digest)), so programs cloned from one
    lowering do not print their weights again. ``texts`` (a dict) receives ``id`` → printed text
    of every instruction whose ``narrow_acc`` flag was not left out (the text it prints as).
    ``known``: ``id`` → the text an instruction is known to print as (not printed again; decision
    P27)."""
    inert = [i for f in module.functions for i in f.instructions()
             if getattr(i, "narrow_acc", False) and narrow_acc_is_inert(i)]
    for inst in inert:
        inst.narrow_acc = False  # type: ignore[attr-defined]
    try:
        text = _program_text(module, {} if digests is None else digests, texts, known)
    finally:
        for inst in inert:
            inst.narrow_acc = True  # type: ignore[attr-defined]
            if texts is not None:
                texts.pop(id(inst), None)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).digest()


def _program_text(module: ir.Module, digests: dict[int, tuple[Any, bytes]],
                  texts: dict[int, str] | None = None, known: dict[int, str] | None = None) -> str:
    out = []
    to_text = ir.instruction_to_text
    for f in module.functions:
        out.append(f"func @{f.name}\n")
        for t in f.tensors:
            head = f"tensor @{t.name} : {t.kind} {t.dtype.name}{list(t.shape)}"
            v = t.value
            if isinstance(v, np.ndarray):
                got = digests.get(id(v))
                if got is None or got[0] is not v:
                    a = np.ascontiguousarray(v)
                    h = hashlib.blake2b(f"{a.dtype.str}{a.shape}".encode(), digest_size=32)
                    h.update(a.reshape(-1).view(np.uint8).data)  # ml_dtypes: no buffer format
                    got = digests[id(v)] = (v, h.digest())
                head += f" = dense {got[1].hex()}"
            elif v is not None:
                head += f" = splat {v!r}"
            out.append(head + "\n")
        for b in f.blocks:
            out.append(f"^{b.name}:\n")
            if texts is None and known is None:
                out.extend(to_text(i) + "\n" for i in b.instructions)
                continue
            for i in b.instructions:
                line = known.get(id(i)) if known is not None else None
                if line is None:
                    line = to_text(i)
                if texts is not None:
                    texts[id(i)] = line
                out.append(line + "\n")
    return "".join(out)


def _instructions(module: ir.Module) -> list[Any]:
    """Every instruction of ``module``, function by function, in program order."""
    return [i for f in module.functions for i in f.instructions()]


def narrow_acc_is_inert(inst: Any) -> bool:
    """Whether an instruction's ``narrow_acc`` flag leaves its accumulation dtype as it is: the
    accumulation is float32 either way (reduce: the operand's dtype when narrow, else float32 for
    floats; select-and-scatter and scatter: the result dtype when narrow, else float32 for floats,
    scatter only for add/mul)."""
    if isinstance(inst, ir.ReduceOp):
        dt = inst.data.dtype
    elif isinstance(inst, ir.ScatterOp):
        if inst.kind not in ("add", "mul"):
            return True
        dt = inst.result.dtype  # type: ignore[union-attr]
    elif isinstance(inst, ir.SelectAndScatterOp):
        dt = inst.result.dtype  # type: ignore[union-attr]
    else:
        return False
    return dt is ir.float32 or not dt.is_float


@dataclass
class Program:
    """One config compiled by a :class:`FlagSetRunner`: the program, its digest (equal digests,
    equal programs) and the precision passes that changed it."""

    compiled: CompiledHlo
    digest: bytes
    changed: list[str]
    #: ``id`` → printed text of the program's instructions, as the digest printed them (the value
    #: memo's signatures reuse them instead of printing again)
    texts: dict[int, str] = field(default_factory=dict, repr=False)
    #: the lowering's instructions (of the copy the passes rewrote), in lowering order: where the
    #: passes left them, or erased (decision P25)
    origin: list[Any] | None = field(default=None, repr=False)
    #: for a program made from its accumulation twin's (decision P25): the twin, whose
    #: instructions are this program's but for ``narrow_acc`` flags (anything that reads no
    #: ``narrow_acc``, a cost estimate say, may read the twin's and leave this module unmade, P26)
    twin: Program | None = field(default=None, repr=False)


class _LazyLowered(lower.Lowered):
    """A lowering whose module is made by ``_make`` when it is first read (decision P26)."""

    _make: Any = None
    _module: ir.Module | None = None

    @property
    def module(self) -> ir.Module:
        if self._module is None:
            assert self._make is not None
            self._module, self._make = self._make(), None
        return self._module

    @module.setter
    def module(self, value: ir.Module | None) -> None:
        self._module = value

    @property
    def made(self) -> bool:
        """Whether the module has been made."""
        return self._module is not None


class FlagSetRunner:
    """One HLO module and one set of inputs, ready to run under many configs: the HLO passes and
    the binding are done once here; the module is lowered once per lowering setting
    (``lower.lowering_key``) and each config's passes run on a copy of that lowering
    (``ir.clone_module``, decision P21), once per program key (what the lowering and the passes
    read of a config, :meth:`program_key`; decision P22); emulated outputs are kept across
    ``run`` calls (so a second call with an already-run program emulates nothing), and with
    ``share_values=True`` (off by default: it costs more than it saves on every model measured,
    decision V29) the values computed by one program are reused by the next wherever
    everything upstream is the same (:class:`~pyprecision.emulate.pipeline.memo.ValueMemo`, at
    most ``memo_bytes``; decision V25). ``module`` is not changed."""

    def __init__(
        self,
        module: Any,
        inputs: Mapping[str, Any] | Sequence[Any],
        target: str = "gen2",
        *,
        hlo_passes: tuple[str, ...] | list[str] = DEFAULT_HLO_PASSES,
        filename: str | None = None,
        text: str | None = None,
        source: str = "inputs",
        share_values: bool = False,
        memo_bytes: int = DEFAULT_MEMO_BYTES,
    ) -> None:
        self.module = copy.deepcopy(module)
        if hlo_passes:
            hlo.run_passes(self.module, list(hlo_passes))
        self.bound = bind_arguments(self.module, inputs, source=source, widen=True)
        self.target, self.filename, self.text = target, filename, text
        self.lowered = 0
        #: lowering settings a forked child lowered and this process has not (V30): counted once
        self._lowered_elsewhere: set[Any] = set()
        self._lowerings: dict[Any, lower.Lowered | Exception] = {}
        self._programs: dict[Any, Program | Exception] = {}
        self._digests: dict[int, tuple[Any, bytes]] = {}
        self._emulated: dict[bytes, tuple[list[np.ndarray] | None, Exception | None]] = {}
        #: digests of the programs verified after their passes (P31)
        self._verified: set[bytes] = set()
        self._narrow_at: dict[Any, list[int] | None] = {}
        #: programs made from their accumulation twin's without running the passes (P25)
        self.derived = 0
        self.emulations = 0
        self.memo = ValueMemo(memo_bytes) if share_values else None
        #: within ``run``: the signatures of the programs planned and not emulated yet, and how
        #: many of those programs have each signature (decision V28)
        self._planned: dict[bytes, dict[int, int]] = {}
        self._later: dict[int, int] = {}

    @contextmanager
    def searching(self) -> Iterator[FlagSetRunner]:
        """A search over many of this runner's configs (tune's, ``run``'s): inside, each program
        made is frozen out of the cyclic collector's walks (``ir.frozen_gc``, decision P30), so
        the collections the search sets off do not walk every program kept so far; on leaving,
        the programs are collected as usual."""
        with ir.frozen_gc():
            yield self

    def _shared_lowering(self, config: PrecisionConfig) -> lower.Lowered | Exception:
        """The one lowering of ``config``'s lowering setting (not to be rewritten; an error is
        the setting's, for every config that has it)."""
        key = lower.lowering_key(config)
        base = self._lowerings.get(key)
        if base is None:
            if key not in self._lowered_elsewhere:
                self.lowered += 1
            try:
                base = lower.lower(self.module, filename=self.filename, text=self.text,
                                   config=config)  # fmt: skip
            except SET_ERRORS as exc:
                base = exc
            self._lowerings[key] = base
        return base

    def _lower(self, config: PrecisionConfig) -> lower.Lowered | Exception:
        """The lowering for ``config``'s lowering setting, as a copy the passes may rewrite (one
        real lowering per setting)."""
        base = self._shared_lowering(config)
        if isinstance(base, Exception):
            return base
        return lower.Lowered(ir.clone_module(base.module), list(base.inputs), list(base.outputs),
                             base.rows, list(base.notes))  # fmt: skip

    def lowering_text(self, config: PrecisionConfig) -> str:
        """The lowering of ``config``'s lowering setting before any precision pass, as
        ``ir.print_module`` prints it but with each dense constant's bytes as a digest
        (``narrow_acc`` flags shown even where inert): equal texts, lowerings that print the
        same. A lowering error raises. It is the lowering ``program`` then copies."""
        base = self._shared_lowering(config)
        if isinstance(base, Exception):
            raise base
        return _program_text(base.module, self._digests)

    def compile(self, config: PrecisionConfig) -> CompiledHlo:
        """The module lowered and through the precision passes of ``config``, verified (errors
        raise), for a run of one's own (e.g. with a trace)."""
        return self.verified(self.program(config)).compiled

    def verified(self, prog: Program) -> Program:
        """``prog``, its module verified after its passes (once per digest: equal digests print
        the same program); a VerifyError raises. :meth:`program` leaves this out, because a
        search compiles many programs it never runs (decision P31): whatever runs or hands out a
        program's module calls this first (:meth:`outputs`, :meth:`compile`)."""
        if prog.digest not in self._verified:
            if prog.twin is not None:  # its twin's instructions but for narrow_acc, which the
                self.verified(prog.twin)  # verifier does not read (P25, P31)
            else:
                assert prog.compiled.config is not None  # the runner's programs have theirs
                verify_pipeline_result(prog.compiled.lowered.module, prog.compiled.config)
            self._verified.add(prog.digest)
        return prog

    def program_key(self, config: PrecisionConfig) -> tuple[Any, ...]:
        """What of ``config`` the lowering and the precision passes read (``lower.lowering_key``,
        ``passes.pipeline_key``): configs with equal keys get one program (decision P22)."""
        return (lower.lowering_key(config), pipeline_key(config, self.target))

    def program(self, config: PrecisionConfig) -> Program:
        """``config``'s program: lowered (a copy of the shared lowering), through its precision
        passes, with its digest; a lowering or pass error raises. Made once per
        :meth:`program_key`: configs with equal keys share the lowered module and statistics
        (not to be rewritten), each with its own ``CompiledHlo.config``. Not verified after its
        passes (decision P31): to run its module yourself, take it from :meth:`compile` or pass
        it through :meth:`verified` first."""
        key = self.program_key(config)
        got = self._programs.get(key)
        if got is None:
            try:
                got = self._program(config)
            except SET_ERRORS as exc:
                got = exc
            self._programs[key] = got
            ir.freeze_made()  # kept: within a search, no collection walks it again (P30)
        if isinstance(got, Exception):
            raise got
        if got.compiled.config is config:
            return got
        return dataclasses.replace(got, compiled=dataclasses.replace(got.compiled, config=config),
                                   changed=list(got.changed))  # fmt: skip

    def _program(self, config: PrecisionConfig) -> Program:
        if not config.enable_mixed_precision_accumulation:
            derived = self._narrowed(config)
            if derived is not None:
                return derived
        base = self._lower(config)
        if isinstance(base, Exception):
            raise base
        if config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3:
            base.notes.extend(relabelled_constants(base))
        origin = _instructions(base.module)
        # verified when emulated or handed out (decision P31): most of a search's are neither
        stats = run_pipeline(base.module, config, self.target, verify_after=False)
        changed = [n for n, c in stats.changed.items() if c]
        texts: dict[int, str] = {}
        with ir.paused_gc(keep=True):  # decisions P24, P34
            digest = _ir_key(base.module, self._digests, texts)
        return Program(CompiledHlo(self.module, base, stats, config, self.target), digest,
                       changed, texts, origin)  # fmt: skip

    def _narrowed(self, config: PrecisionConfig) -> Program | None:
        """``config``'s program (mixed-precision accumulation off) made from its twin's (the same
        config with it on) without running the passes again (decision P25): the two lowerings
        differ only in the ``narrow_acc`` flags of some instructions and no pass reads those flags
        or the accumulation setting, so the passes rewrite both alike; the twin's program, copied,
        gets the flags on the instructions the flagged ones became. The copy is made when the
        module is first read (decision P26): the digest is printed from the twin's module with the
        flags set for the while, and :attr:`Program.twin` names the program whose instructions are
        the same but for those flags. None when the lowerings differ otherwise, or the twin does
        not compile (the caller then compiles ``config`` itself)."""
        twin = dataclasses.replace(config, enable_mixed_precision_accumulation=True)
        at = self._narrow_positions(config, twin)
        if at is None:
            return None
        try:
            prog = self.program(twin)
        except SET_ERRORS:
            return None
        if prog.origin is None:
            return None
        marked = {id(prog.origin[k]) for k in at}
        src = prog.compiled.lowered.module
        narrow = self._shared_lowering(config)
        assert not isinstance(narrow, Exception)  # _narrow_positions had it
        flip = [i for i in _instructions(src) if id(i) in marked and not i.narrow_acc]
        printed: dict[int, str] = {}  # keyed by the twin's instructions
        # the twin's lines stand for every instruction but the flipped ones (decision P27)
        flipped = {id(i) for i in flip}
        known = {k: v for k, v in prog.texts.items() if k not in flipped}
        if all(narrow_acc_is_inert(i) for i in flip):
            # every flag set leaves its accumulation as it is: the digest prints the twin's text,
            # so it is the twin's digest, and each line the twin's (decision P33)
            digest, printed = prog.digest, known
        else:
            with ir.paused_gc(keep=True):  # decisions P24, P34
                for inst in flip:
                    inst.narrow_acc = True
                try:
                    digest = _ir_key(src, self._digests, printed, known)
                finally:
                    for inst in flip:
                        inst.narrow_acc = False
        texts: dict[int, str] = {}  # filled, keyed by the copy's instructions, when it is made

        def make() -> ir.Module:
            with ir.paused_gc(keep=True):
                module = ir.clone_module(src)
                for a, b in zip(_instructions(src), _instructions(module), strict=True):
                    if id(a) in marked:
                        b.narrow_acc = True
                    line = printed.get(id(a))
                    if line is not None:
                        texts[id(b)] = line
            return module

        lowered = _LazyLowered(None, list(narrow.inputs),  # type: ignore[arg-type]
                               list(narrow.outputs), narrow.rows,
                               list(prog.compiled.lowered.notes))  # fmt: skip
        lowered._make = make
        compiled = CompiledHlo(self.module, lowered, prog.compiled.statistics, config, self.target)
        self.derived += 1
        return Program(compiled, digest, list(prog.changed), texts, twin=prog)

    def _narrow_positions(self, config: PrecisionConfig, twin: PrecisionConfig
                          ) -> list[int] | None:  # fmt: skip
        """Where (in lowering order) ``config``'s lowering sets a ``narrow_acc`` flag that
        ``twin``'s does not, when that is all that differs (the same instructions, printing the
        same with those flags cleared; the same inputs, outputs and notes); else None. Once per
        pair of lowering settings."""
        key = (lower.lowering_key(config), lower.lowering_key(twin))
        if key in self._narrow_at:
            return self._narrow_at[key]
        at: list[int] | None = None
        a, b = self._shared_lowering(config), self._shared_lowering(twin)
        if not isinstance(a, Exception) and not isinstance(b, Exception) \
                and (a.inputs, a.outputs, a.notes) == (b.inputs, b.outputs, b.notes):
            ia, ib = _instructions(a.module), _instructions(b.module)
            if len(ia) == len(ib):
                at = [k for k, (x, y) in enumerate(zip(ia, ib, strict=True))
                      if getattr(x, "narrow_acc", False) and not getattr(y, "narrow_acc", False)]
                for k in at:
                    ia[k].narrow_acc = False
                try:
                    same = _program_text(a.module, self._digests) == \
                        _program_text(b.module, self._digests)
                finally:
                    for k in at:
                        ia[k].narrow_acc = True
                at = at if same else None
        self._narrow_at[key] = at
        return at

    def outputs(self, prog: Program) -> list[np.ndarray]:
        """The outputs of ``prog`` on the bound inputs (emulated once per digest; the error of a
        failed emulation raises each time it is asked for)."""
        got = self._emulated.get(prog.digest)
        if got is None:
            self.emulations += 1
            try:
                self.verified(prog)
                got = (self._emulate(prog), None)
            except SET_ERRORS as exc:
                got = (None, exc)
            self._emulated[prog.digest] = got
        if got[1] is not None:
            raise got[1]
        assert got[0] is not None
        return got[0]

    def _emulate(self, prog: Program) -> list[np.ndarray]:
        compiled = prog.compiled
        if self.memo is None:
            return run_compiled(compiled, self.bound.args)

        def run(module: ir.Module, trace: dict[int, np.ndarray] | None) -> list[np.ndarray]:
            lowered = dataclasses.replace(compiled.lowered, module=module)
            return run_compiled(dataclasses.replace(compiled, lowered=lowered), self.bound.args,
                                trace)  # fmt: skip

        sigs = self._planned.pop(prog.digest, None)
        later = None
        if sigs is not None:  # this program's signatures leave the ones still to come (V28)
            for sig in set(sigs.values()):
                left = self._later[sig] - 1
                if left:
                    self._later[sig] = left
                else:
                    del self._later[sig]
            later = self._later.keys()
        return self.memo.run(compiled.lowered.module, run, prog.texts, sigs, later)

    def _plan(self, configs: Sequence[PrecisionConfig]) -> None:
        """Before ``run`` emulates ``configs``' programs: their signatures, and for each signature
        how many of the programs still to emulate have it, so that a program's run records only
        the values a later one can take from the memo (decision V28)."""
        assert self.memo is not None
        seen = set(self._emulated)
        for config in configs:
            try:
                prog = self.program(config)
            except SET_ERRORS:
                continue  # run_one records the error
            if prog.digest in seen:
                continue
            seen.add(prog.digest)
            with ir.paused_gc():  # decision P24
                sigs = self.memo.signatures(prog.compiled.lowered.module.main, prog.texts)
            self._planned[prog.digest] = sigs
            for sig in set(sigs.values()):
                self._later[sig] = self._later.get(sig, 0) + 1

    def _run_forked(self, configs: Sequence[PrecisionConfig]) -> dict[int, tuple[bytes, list[str]]]:
        """Before ``run`` goes through ``configs`` (without the memo), with two or more threads in
        force, on Linux (decision V30): the configs are split by program key, every other
        key (with its accumulation twin: P25 makes one program from the other) to a forked child,
        which compiles and emulates them while this process compiles and emulates the rest, each
        under half the threads. Returns, per index of a config the child ran, its program's
        digest and the passes that changed it; the child's outputs are stored as if emulated
        here. A config that failed in the child (compiling or emulating), or every config of a
        child that failed, is left to ``run``, which runs it here as before."""
        workers = default_threads()
        if workers < 2 or not can_fork() or len(configs) < 2:
            return {}
        units: dict[Any, int] = {}
        unit = [units.setdefault(self.program_key(dataclasses.replace(
            c, enable_mixed_precision_accumulation=True)), len(units)) for c in configs]
        theirs = [i for i, u in enumerate(unit) if u % 2 == 1]
        if not theirs:
            return {}
        mine = [i for i, u in enumerate(unit) if u % 2 == 0]

        def elsewhere() -> tuple[list[tuple[bytes, list[str]] | None], dict[bytes, Any], list[Any]]:
            rows: list[tuple[bytes, list[str]] | None] = []
            outs: dict[bytes, Any] = {}
            for i in theirs:
                try:
                    prog = self.program(configs[i])
                    outs[prog.digest] = self.outputs(prog)
                    rows.append((prog.digest, list(prog.changed)))
                except SET_ERRORS:
                    rows.append(None)  # run here again, which records the error
            return rows, outs, list(self._lowerings)

        with thread_limit(max(1, workers // 2)), forked(elsewhere) as child:
            for i in mine:
                with suppress(*SET_ERRORS):  # recorded: run_one reports it
                    self.outputs(self.program(configs[i]))
            got = child.result()
        if not (isinstance(got, tuple) and len(got) == 3 and len(got[0]) == len(theirs)):
            return {}  # the child failed: run does its configs here
        rows, outs, lowered = got
        self._lowered_elsewhere.update(k for k in lowered if k not in self._lowerings)
        self.adopt(outs)
        return {i: row for i, row in zip(theirs, rows, strict=True) if row is not None}

    def adopt(self, outs: Mapping[bytes, list[np.ndarray]]) -> None:
        """Outputs a forked child of this runner emulated (its :meth:`outputs`, by digest), kept
        as if emulated here: the child verified each program before emulating it (P31), and
        equal digests print the same program; a program emulated here and there counts once."""
        for digest, value in outs.items():
            self._verified.add(digest)
            if digest not in self._emulated:
                self._emulated[digest] = (value, None)
                self.emulations += 1

    def run_one(self, config: PrecisionConfig, strict: bool = False
                ) -> tuple[FlagSetRun, bytes | None]:
        """One config: its run, and the digest of its program (None when it did not compile).
        With ``strict`` a failure raises instead of being recorded in the run."""
        try:
            prog = self.program(config)
        except SET_ERRORS as exc:
            if strict:
                raise
            return FlagSetRun(config, None, error=str(exc)), None
        same_as = -1 if prog.digest in self._emulated else None
        try:
            outs, err = self.outputs(prog), None
        except SET_ERRORS as exc:
            if strict:
                raise
            outs, err = None, str(exc)
        return FlagSetRun(config, outs, err, same_as, prog.changed), prog.digest

    def run(self, configs: Sequence[PrecisionConfig]) -> SharedRuns:
        """Every config, in order; ``same_as`` names the earlier config of this call whose
        program was the same (-1: one emulated by an earlier call)."""
        runs: list[FlagSetRun] = []
        first: dict[bytes, int] = {}
        before = self.emulations
        earlier = set(self._emulated)  # emulated by an earlier call
        ran: dict[int, tuple[bytes, list[str]]] = {}
        with self.searching():  # the programs kept are not walked by every collection (P30)
            if self.memo is not None:
                self._plan(configs)
            else:
                ran = self._run_forked(configs)
            try:
                for i, config in enumerate(configs):
                    digest: bytes | None
                    if i in ran and self._emulated[ran[i][0]][1] is None:  # the child's (V30)
                        digest, changed = ran[i]
                        run = FlagSetRun(config, self._emulated[digest][0], None, None, changed)
                    else:
                        run, digest = self.run_one(config)
                    if digest is not None:
                        if digest in first:
                            run.same_as = first[digest]
                        else:
                            first[digest] = i
                            run.same_as = -1 if digest in earlier else None
                    runs.append(run)
            finally:
                self._planned.clear()
                self._later.clear()
        return SharedRuns(runs, self.bound.unused, self.lowered, self.emulations - before)


def run_flag_sets(module: Any, configs: Sequence[PrecisionConfig],
                  inputs: Mapping[str, Any] | Sequence[Any], *args: Any,
                  **kwargs: Any) -> SharedRuns:  # fmt: skip
    """``FlagSetRunner(module, inputs, *args, **kwargs).run(configs)``: every config of
    ``configs`` on ``inputs``, sharing the HLO passes, the lowerings, identical emulations and
    (with ``share_values=True``) values (see :class:`FlagSetRunner` for the options); ``module``
    is not changed. A config that fails (lowering, passes, emulation) gets its ``error``; the
    others still run. Bad inputs raise at once (they are bad for every config)."""
    return FlagSetRunner(module, inputs, *args, **kwargs).run(configs)

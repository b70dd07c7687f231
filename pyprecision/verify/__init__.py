"""Compare what a device produced with what the emulator says it should have produced.

``verify_cast`` checks one cast bit for bit (with a diagnosis of the policy that explains a
mismatching dump); ``verify_program`` runs an IR program or HLO module through the passes and the
emulator and checks every output. Reports render as text, JSON or a PNG.
"""
from pyprecision.verify.cast_check import CastReport, Report, dump_as_codes, verify_cast
from pyprecision.verify.compare import (
    CodeSpace,
    Comparison,
    code_space,
    compare_codes,
    ordered,
    ulp_histogram,
)
from pyprecision.verify.diagnose import Diagnosis, candidates, diagnose, stochastic_consistent
from pyprecision.verify.dumps import (
    RawSpec,
    is_container,
    parse_dtype,
    parse_shape,
    read_array,
    read_arrays,
)
from pyprecision.verify.policy import CastPolicy
from pyprecision.verify.program_check import (
    FlagSet,
    ProgramCheck,
    ProgramDiagnosis,
    hlo_outputs,
    is_hlo_path,
    read_inputs,
    verify_program,
)
from pyprecision.verify.render import mismatch_rows, plot_report, report_json, report_lines

__all__ = [
    "CastPolicy", "CastReport", "Report", "verify_cast", "dump_as_codes",
    "CodeSpace", "code_space", "Comparison", "compare_codes", "ordered", "ulp_histogram",
    "Diagnosis", "diagnose", "candidates", "stochastic_consistent",
    "RawSpec", "is_container", "read_array", "read_arrays", "parse_dtype", "parse_shape",
    "report_json", "report_lines", "mismatch_rows", "plot_report",
    "verify_program", "ProgramCheck", "ProgramDiagnosis", "FlagSet", "is_hlo_path", "hlo_outputs", "read_inputs",
]

"""Compare what a device produced with what the emulator says it should have produced.

``verify_cast`` checks one cast bit for bit (with a diagnosis of the policy that explains a
mismatching dump); ``verify_program`` runs an IR program or HLO module through the passes and the
emulator and checks every output within its op-class tolerance (``distance``), diagnoses a failing
dump by ranking flag sets by distance (``ranking``) and, given intermediate dumps, names the first
op where device and emulation part (``divergence``). Reports render as text, JSON or a PNG.
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
from pyprecision.verify.distance import (
    TRANSCENDENTAL,
    TRANSCENDENTAL_RTOL,
    Distance,
    Tolerance,
    class_tolerance,
    distance,
    output_classes,
    passing,
)
from pyprecision.verify.divergence import Divergence, first_divergence
from pyprecision.verify.dumps import (
    RawSpec,
    is_container,
    parse_dtype,
    parse_shape,
    read_array,
    read_arrays,
)
from pyprecision.verify.hlo_check import hlo_arguments, lowered_outputs, mode_argv
from pyprecision.verify.many import (
    DumpResult,
    find_dumps,
    is_many,
    match_inputs,
    run_many,
    summary_lines,
    write_reports,
)
from pyprecision.verify.module_source import read_module_text
from pyprecision.verify.policy import CastPolicy
from pyprecision.verify.program import verify_program
from pyprecision.verify.program_check import (
    FlagSet,
    ProgramCheck,
    as_logical,
    hlo_outputs,
    is_hlo_path,
    read_inputs,
)
from pyprecision.verify.ranking import ProgramDiagnosis, Ranked
from pyprecision.verify.render import mismatch_rows, plot_report, report_json, report_lines

__all__ = [
    "TRANSCENDENTAL",
    "TRANSCENDENTAL_RTOL",
    "Distance",
    "Divergence",
    "Ranked",
    "Tolerance",
    "class_tolerance",
    "distance",
    "first_divergence",
    "output_classes",
    "passing",
    "mode_argv",
    "CastPolicy",
    "CastReport",
    "CodeSpace",
    "Comparison",
    "Diagnosis",
    "FlagSet",
    "ProgramCheck",
    "ProgramDiagnosis",
    "RawSpec",
    "Report",
    "candidates",
    "code_space",
    "compare_codes",
    "diagnose",
    "dump_as_codes",
    "hlo_arguments",
    "hlo_outputs",
    "lowered_outputs",
    "is_container",
    "is_hlo_path",
    "mismatch_rows",
    "ordered",
    "parse_dtype",
    "parse_shape",
    "plot_report",
    "read_array",
    "read_arrays",
    "read_inputs",
    "read_module_text",
    "as_logical",
    "report_json",
    "report_lines",
    "stochastic_consistent",
    "ulp_histogram",
    "verify_cast",
    "verify_program",
    "DumpResult",
    "find_dumps",
    "is_many",
    "match_inputs",
    "run_many",
    "summary_lines",
    "write_reports",
]

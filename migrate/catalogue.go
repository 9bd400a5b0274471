package migrate

// Status says how directly a legacy construct maps onto v1.
type Status string

// The three statuses of a finding.
const (
	// Supported: a direct v1 construct exists.
	Supported Status = "supported"
	// Diagnostic: it maps only under conditions a person or model must check.
	Diagnostic Status = "diagnostic"
	// Unsupported: there is no v1 equivalent; redesign or drop it.
	Unsupported Status = "unsupported"
)

// construct is one row of the catalogue. The labels and the note are the
// observable output format, the reference's own (docs/migrate.md,
// "Reading the report"), and must not be reworded.
type construct struct {
	status Status
	legacy string
	v1     string
	note   string
}

// Finding ids. They are the stable names of the legacy constructs.
const (
	idFunctionInfer         = "function-infer"
	idFunctionCompute       = "function-compute"
	idFunctionGate          = "function-gate"
	idInline                = "inline"
	idJudgeFold             = "judge-fold"
	idJudgeUnsupported      = "judge-unsupported"
	idIterate               = "iterate"
	idScoreAccumulate       = "score-accumulate"
	idDecompose             = "decompose"
	idDecomposeDependencies = "decompose-dependencies"
	idParallelDispatch      = "parallel-dispatch"
	idParallelUnsupported   = "parallel-unsupported"
	idPipelineWhen          = "pipeline-when"
	idPipelineNested        = "pipeline-nested"
	idPipelineExit          = "pipeline-exit"
	idSubflow               = "subflow"
	idMaxRounds             = "max-rounds"
	idMissingMaxRounds      = "missing-max-rounds"
	idDependsOn             = "depends-on"
	idSkipIf                = "skip-if"
	idNext                  = "next"
	idOnFail                = "on-fail"
	idEnsureExpressions     = "ensure-expressions"
	idContracts             = "contracts"
	idFlowOutput            = "flow-output"
	idUnreadable            = "unreadable"
)

// catalogue returns the fixed description of every finding id. It is a
// function rather than a package variable so that no caller can modify it.
func catalogue() map[string]construct {
	return map[string]construct{
		idFunctionInfer:         {Supported, "function decl mode: infer + step", "task (agent from step; inline declaration)", "agent-dispatched"},
		idFunctionCompute:       {Supported, "function decl mode: compute + step", "task (agent-dispatched)", "Python compute is dispatched; do not map it to set"},
		idFunctionGate:          {Supported, "function decl mode: gate + step", "gate construct", "carry routing fields"},
		idInline:                {Supported, "inline step", "task", ""},
		idJudgeFold:             {Diagnostic, "judge deterministic/judged predicates", "ensures on its single antecedent", "zero or multiple antecedents need a diagnostic"},
		idJudgeUnsupported:      {Unsupported, "judge verified/applied_gate/budgets", "UNSUPPORTED", "fold manually or keep on Python"},
		idIterate:               {Supported, "max_iterations + exit_criterion", "iterate: { max, until }", ""},
		idScoreAccumulate:       {Unsupported, "score_expr/accumulate/accumulate_key", "UNSUPPORTED", ""},
		idDecompose:             {Supported, "decompose without task depends_on", "task contract tasks: T[] plus fanout", "TaskGraph uses .tasks"},
		idDecomposeDependencies: {Unsupported, "TaskGraph tasks with depends_on", "UNSUPPORTED", "v1 fanout has no cross-item dependencies"},
		idParallelDispatch:      {Supported, "parallel_dispatch", "fanout", "source/intent/concurrency/worktree-none/require/merge map by re-authoring"},
		idParallelUnsupported:   {Unsupported, "branch/manual/reference pre_merge/certificates/timeouts/diff/deferred", "UNSUPPORTED", ""},
		idPipelineWhen:          {Supported, "pipeline stages with when", "fanout steps with when", ""},
		idPipelineNested:        {Unsupported, "pipeline stages with nested fanout/join regions", "UNSUPPORTED", "flatten the region or keep on Python"},
		idPipelineExit:          {Unsupported, "pipeline exit_when", "UNSUPPORTED", "not iterate.until"},
		idSubflow:               {Supported, "flow step", "subflow run", "non-recursive"},
		idMaxRounds:             {Supported, "flow max_rounds", "flow max_rounds", "same revise budget"},
		idMissingMaxRounds:      {Diagnostic, "revise gate without flow max_rounds", "explicit max_rounds", "start at 3; v1 forbids unlimited revision"},
		idDependsOn:             {Supported, "depends_on", "refs plus after", "retain dependencies not implied by refs"},
		idSkipIf:                {Supported, "skip_if", "when", "invert its sense"},
		idNext:                  {Diagnostic, "next", "DAG edges and gate routing", "irreducible jumps need a diagnostic"},
		idOnFail:                {Diagnostic, "on_fail", "on_fail to a topologically later step", "backward graphs are unsupported"},
		idEnsureExpressions:     {Diagnostic, "ensure/exit_criterion expressions", "v1 expression grammar", "untranslatable expressions need a diagnostic"},
		idContracts:             {Diagnostic, "contracts/output_schema", "contract language", "only the enumerated type subset maps"},
		idFlowOutput:            {Diagnostic, "route-dependent final output", "output: { from, contract }", "requires a unique static terminal producer"},
		// The note of an unreadable finding is the specific reason; it is
		// supplied where the finding is made.
		idUnreadable: {Diagnostic, "legacy document", "none", ""},
	}
}

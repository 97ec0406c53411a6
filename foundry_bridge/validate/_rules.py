"""Every rule of the gate, declared as data, and the context through which checks report what they find.

A ``Rule`` is a code (stable, what ``by_code`` counts and docs/validation.md lists), a severity, a message template
and a fix-hint template (``str.format`` with named fields; ``{field}`` is always available). A code may have several
rules when the same fault reads differently in different places (``not_a_list`` for documents and for labels).
A rule without a hint template takes the ``hint`` given by the check (did-you-mean hints, or None). Checks never
build a ``Problem`` themselves: they call ``Context.add(rule_name, field, ...)``, which locates it (file, line)
and hands it to the report.

Problems found while reading rows (``missing_query_id``, ``bad_kind``, TREC column counts, ...) are the readers'
(``foundry_bridge.dataset``): the gate passes them on unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dataset.absent import MISSING_FIELD
from ..dataset.problems import Problem, Severity

if TYPE_CHECKING:
    from ._report import ValidationReport

__all__ = ["RULES", "Context", "Rule"]


@dataclass(frozen=True)
class Rule:
    """One check's outcome: ``code``, ``severity``, message and fix templates (``str.format``, named fields)."""

    name: str
    code: str
    severity: Severity
    message: str
    hint: str | None = None


_FROM_RANK = "set dataset.fields.retrieved_documents.scores_from_rank: true to "


def _e(name: str, message: str, hint: str | None = None) -> Rule:
    return Rule(name, name.split("/")[0], "error", message, hint)


def _w(name: str, message: str, hint: str | None = None) -> Rule:
    return Rule(name, name.split("/")[0], "warning", message, hint)


_TABLE = (
    # -- the mapping file and the criteria: names, init parameters, inputs, templates ------------------------------
    _e("bad_mapping", "{message}"),
    _e("missing_evaluator", "evaluator name is missing"),
    _e("unknown_evaluator", "{evaluator!r} is not a known builtin evaluator", "{suggestion}"),
    _e("unknown_init_param", "{key!r} is not an initialization parameter of {evaluator}", "{suggestion}"),
    _e("env_not_set", "{message}"),
    _e("bad_init_type/expanded", "{message}"),
    _e("bad_init_type", "{key} {problem}"),
    _e(
        "missing_deployment",
        "{evaluator} is an LLM judge and needs deployment_name",
        'add deployment_name: "${{AZURE_AI_MODEL_DEPLOYMENT_NAME}}"',
    ),
    _e("missing_deployment/empty", "deployment_name is empty", "name the judge model deployment"),
    _w(
        "label_max_fidelity",
        "ground_truth_label_max is {label_max}: Foundry's fidelity metric mis-weights labels when the maximum is 10 "
        "or more (it sorts labels as strings)",
        "rescale labels to 0-9 (e.g. round(label * 9 / {label_max})) or ignore fidelity",
    ),
    _e(
        "bad_label_range",
        "ground_truth_label_max ({label_max}) must be greater than ground_truth_label_min ({label_min})",
    ),
    _e(
        "duplicate_criterion_name/mapping",
        "criterion name {name!r} is used twice",
        "give each evaluator entry a distinct `name`",
    ),
    _e("duplicate_criterion_name", "criterion name {name!r} is used twice", "give each criterion a distinct `name`"),
    _e("input_wrong_case", "input {key!r} has the wrong case", "write {guess!r}"),
    _e("unknown_input", "{key!r} is not an input of {evaluator}", "{suggestion}"),
    _e(
        "bad_criteria_file",
        "expected a JSON list of testing_criteria or an eval-create body with `testing_criteria`",
    ),
    _e("bad_criterion", "a criterion must be a JSON object"),
    _w("not_checked", "criterion type {type!r} is not azure_ai_evaluator; not checked"),
    _w(
        "evaluator_version",
        "{evaluator} is pinned at version {version}; the published contract this tool checks is version {current}",
        "drop evaluator_version to run the current one, or compare the contracts with `foundry-bridge catalog diff`; "
        "results are read as long as the older version's metric names are known (document_retrieval 2's "
        "one result per measure is)",
    ),
    _e("missing_name", "criterion name is missing", "every criterion needs a unique `name`"),
    _e("bad_init", "initialization_parameters must be an object"),
    _e("missing_data_mapping", "data_mapping is missing", "map each input to a {{{{item.<field>}}}} template"),
    _e("bad_template", "{template!r} is not a {{{{item.<field>}}}} template", 'write "{{{{item.{key}}}}}"'),
    _e(
        "sample_template",
        "{template!r} needs a model or agent target; a dataset run has only item fields",
        'map it to a dataset field: "{{{{item.{key}}}}}"',
    ),
    _e("missing_input_mapping", "{evaluator} needs input(s) {missing} in data_mapping", "{pairs}"),
    # -- files and rows ---------------------------------------------------------------------------------------------
    _e("missing_file/jsonl", "dataset file not found (a JSONL file)"),
    _e("missing_file/directory", "is a directory, not a JSONL file", "for TREC input set dataset.format: trec"),
    _e("missing_file/trec", "TREC input is a directory holding the qrels, run and queries files"),
    _e("missing_file/reread", "dataset file could not be read again: {reason}"),
    _e("missing_file/criteria", "criteria file not found"),
    _e("bad_table", "{message}"),
    _e("bad_json/criteria", "malformed JSON: {reason}"),
    # a JSONL line that cannot be decoded, and the input limits of every JSON reader: message and fix come from
    # the one decoder (foundry_bridge.dataset._json.decode)
    _e("bad_json", "{message}"),
    _e("not_utf8", "{message}"),
    _e("utf8_bom", "{message}"),
    _e("too_deep", "{message}"),
    _e("non_finite_number", "{message}"),
    _w(
        "duplicate_key",
        "key {key!r} is written twice in one object (keys #{first} and #{second} in its key order): the JSON reader "
        "keeps the last value silently",
        "remove or rename one of them",
    ),
    _w(
        "duplicate_key/criteria",
        "key {key!r} is written twice in one object (lines {first} and {second}): the JSON reader keeps the last "
        "value silently",
        "remove or rename one of them",
    ),
    _e(
        "no_evaluators",
        "the mapping has no evaluators: nothing would be evaluated",
        "add an `evaluators:` entry (e.g. `- evaluator: builtin.document_retrieval`); `foundry-bridge metrics` "
        "needs none",
    ),
    _w(
        "near_duplicate_query_id",
        "{key} {id!a} differs from {other!a} (line {first}) only by {how}",
        "give the two queries distinct ids, or one id if they are the same query",
    ),
    _w(
        "near_duplicate_document_id",
        "document id {id!a} differs from {other!a} ({list}[{first}]) only by {how}",
        "write each document's id exactly the same way everywhere",
    ),
    _e("not_an_object", "a row must be a JSON object"),
    _e("empty_dataset", "the dataset has no rows", "nothing to evaluate"),
    _e(
        "missing_query_id/none",
        "no row has {field!r}, where the {mapping} reads the query id{others}",
        "{suggestion}",
    ),
    _e(
        "bad_kind/none",
        "no row's {field!r} is 'positive' or 'negative': the rows have {values}",
        "{suggestion}",
    ),
    _e(
        "entry_key_not_in_data",
        "no entry of {list!r} has the key {name!r} ({row}): the mapping reads {what} there",
        "{suggestion}",
    ),
    _w(
        "entry_key_not_in_data/optional",
        "no entry of {list!r} has the key {name!r} ({row}): the mapping reads {what} there",
        "{suggestion}",
    ),
    _e("duplicate_query_id", "{key} {id!r} is already used on line {first}", "give every query a unique id"),
    _e(
        "missing_input",
        "required input {input!r} of criterion {criterion!r} is missing: the row has no {field!r}{note}",
        "{suggestion}",
    ),
    _e("missing_field", MISSING_FIELD, "{suggestion}"),  # also what the readers raise (dataset.absent)
    _e("missing_field/none", "no row has {field!r}: {role}", "{suggestion}"),
    _w(
        "no_ranking",
        "no row has {field!r} and no criterion reads it: no local ranking metric or search stage is computed",
        "if the dataset has rankings, point dataset.fields.retrieved_documents at them; if it has none, set "
        "dataset.fields.retrieved_documents: null",
    ),
    _e("field_not_in_data", "no row has the field {field!r} that {readers} read", "{suggestion}"),
    _e("field_wrong_case", "no row has the field {field!r} that {readers} read", "wrong case: the data has {guess!r}"),
    _w("empty_query", "{key} is empty"),
    _w("empty_response", "{key} is empty"),
    _w(
        "positive_without_relevant",
        "kind is positive but no label reaches the relevance threshold {threshold}",
        "label the passage that answers it, or mark the query negative",
    ),
    _w(
        "negative_with_relevant",
        "kind is negative but a label reaches the relevance threshold {threshold}",
        "a negative query has no answer in the corpus: check the label or the kind",
    ),
    # -- values: strings, document lists, label lists ---------------------------------------------------------------
    _e(
        "context_not_string",
        "{field} is a list of {chunks} chunks, not a string",
        'join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model',
    ),
    _e("not_a_string", "{field} must be a string, got {type}"),
    _e("not_a_list/documents", "{field} must be a list of {{document_id, relevance_score}}"),
    _e("not_a_list/labels", "{field} must be a list of {{document_id, query_relevance_label}}"),
    _e("not_an_object/entry", "{field} must be an object"),
    _e(
        "too_many_documents",
        "{count} documents in {field}; Foundry accepts at most {limit}",
        "keep the top {limit}",
    ),
    _e("too_many_documents/labels", "{count} labels in {field}; Foundry accepts at most {limit}"),
    _e("missing_id", "{key} is missing"),
    _w(
        "numeric_id/row",
        "document id {id} is a JSON number, read as the string {sid!r}: {id} and {sid!r} become the same id{more}",
        "write ids as JSON strings",
    ),
    _w(
        "numeric_id",
        "document_id {id} is a number; Foundry compares ids by value and type, foundry_bridge reads it as a string",
        "write ids as JSON strings",
    ),
    _w(
        "duplicate_document_id",
        "document {id!r} appears twice in {list}: Foundry keeps the last score, foundry_bridge's metrics the first "
        "position",
        "remove the duplicate",
    ),
    _w(
        "duplicate_document_id/labels",
        "document {id!r} is labelled twice in {list}: Foundry keeps the last label, foundry_bridge's metrics the first",
        "keep one label per document",
    ),
    _e("missing_score", "{key} is missing; Foundry requires a number", _FROM_RANK + "send scores from rank"),
    _e("bad_score", "{key} must be a number, got {score!r}"),
    _w(
        "order_disagrees_with_scores",
        "list order disagrees with {key} order at rank {rank} ({score} > {previous}): Foundry ranks by "
        "score, so this list is scored in another order than it was shown",
        _FROM_RANK + "synthesize monotone scores from rank",
    ),
    _e(
        "empty_ground_truth",
        "{field} is empty; Foundry requires at least one label",
        "label at least one document, or drop the row from document_retrieval",
    ),
    _e("label_not_integer/float", "{message}"),
    _e("label_not_integer", "label must be an integer, got {label!r}", "write labels as JSON integers"),
    _e("missing_label", "label is missing"),
    # -- document_retrieval: labels against the criterion's range, and Foundry's quirks -----------------------------
    _e(
        "label_out_of_range",
        "label {label} is {side} {bound} (criterion {criterion!r})",
        "fix the label, or declare the range in the mapping's `labels` (min/max)",
    ),
    _w(
        "holes_below_min",
        "{count} retrieved document(s) without a label ({first!r}...): Foundry counts a hole as label 0, below "
        "ground_truth_label_min {label_min} ('irrelevant'), so holes rank below documents judged irrelevant",
        "label every retrieved document, or use labels from 0",
    ),
    _w(
        "nan_fidelity",
        "every label equals ground_truth_label_min {label_min} ('irrelevant'): Foundry's fidelity divides by zero "
        "here, so it reports NaN and fails",
        "expected for a query with no relevant document; with labels from 0 (0 = irrelevant, "
        "ground_truth_label_min: 0) Foundry reports 0 instead",
    ),
    _w(
        "zero_result",
        "{count} row(s) retrieve no document with a non-zero label although one is labelled ({lines}): Foundry "
        "reports the integer 0 for ndcg@3, xdcg@3, fidelity, top1_relevance and top3_max_relevance on them and "
        "fails them (criterion {criterion!r}){negatives}",
        "nothing to fix if the search really missed those documents; a query with no answer in the corpus should "
        "have all its labels 0",
    ),
)

RULES: dict[str, Rule] = {r.name: r for r in _TABLE}


class Context:
    """Where a check is (file; a YAML file's line lookup) and the report that collects what it finds.

    ``line_of`` maps a field path inside the file (``("evaluators", 0, "init")``) to its line; checks of rows pass
    the row's ``line`` instead. ``rename`` turns the item field paths the checks name (and a ``list`` parameter)
    into the paths of the user's rows (``absent.user_path``); a template's ``{key}`` is the last key of that path.
    ``drop``: problems not to report (said once elsewhere).
    """

    def __init__(
        self,
        report: ValidationReport,
        file: str | None,
        line_of: Callable[[tuple[Any, ...]], int | None] | None = None,
        *,
        rename: Callable[[str], str] | None = None,
        drop: Callable[[Problem], bool] | None = None,
    ) -> None:
        self.report = report
        self.file = file
        self.line_of = line_of or (lambda loc: None)
        self.rename = rename
        self.drop = drop

    def problem(
        self,
        rule: str,
        field: str | None = "",
        *,
        line: int | None = None,
        loc: tuple[Any, ...] | None = None,
        file: str | None = None,
        hint: str | None = None,
        at: tuple[int, ...] = (),
        **params: Any,
    ) -> Problem:
        """The ``Problem`` of ``rule`` with its templates filled from ``field`` and ``params``; ``at``: the lines
        of a problem about several rows (``Problem.lines``)."""
        r = RULES[rule]
        if self.rename is not None:
            field = self.rename(field) if field else field
            if isinstance(params.get("list"), str):
                params["list"] = self.rename(params["list"])
        values = {"field": field, "key": (field or "").rsplit(".", 1)[-1], **params}
        if loc is not None:
            line = self.line_of(loc)
        return Problem(
            r.severity,
            r.code,
            r.message.format(**values),
            self.file if file is None else file,
            line,
            field,
            r.hint.format(**values) if r.hint is not None else hint,
            lines=at,
        )

    def add(self, rule: str, field: str | None = "", **kwargs: Any) -> None:
        """Report ``rule`` (see ``problem`` for the arguments)."""
        self.report_problem(self.problem(rule, field, **kwargs))

    def report_problem(self, problem: Problem) -> None:
        """Hand ``problem`` to the report, unless ``drop`` says it is said elsewhere."""
        if self.drop is None or not self.drop(problem):
            self.report.add(problem)

#!/usr/bin/env python3
"""Checks a SAM template with the tools AWS publishes, offline, and writes what CloudFormation reads.

    python3 scripts/check-template.py TEMPLATE [--out TRANSLATED.json] [--param K=V ...]

1. cfn-lint (1.51.0) lints the template, the SAM transform included, with its default checks (as
   `cfn-lint TEMPLATE` does). Every error or warning is a finding. Informational checks (cfn-lint
   -i I) are left out: they ask for explicit DeletionPolicy/retention settings on every log group,
   queue and secret, which are suggestions for the author, not statements that the template is
   wrong; a match that does come with informational severity is printed as a note.
2. AWS's SAM translator (aws-sam-translator 1.110.0) translates it to plain CloudFormation, the way
   CloudFormation's AWS::Serverless transform does on deploy. Local CodeUri paths become the S3
   location `sam package` would upload them to (its key is the MD5 of the file's content), so a
   change of the built code changes the translation as it does on a real deploy; a path that is not
   built yet gets a placeholder key (a note, not a finding). --param values are the parameter
   values the transform sees (CloudFormation passes the stack's values); the others keep their
   Default. Managed policy names resolve from the list cfn-lint ships, so nothing calls AWS.
3. With --out, the translated CloudFormation is written there as JSON.

Exit status: 0 clean, 1 findings (printed), 2 the tools are missing (printed: how to install them).
"""

import argparse
import copy
import hashlib
import json
import os
import sys
from pathlib import Path

INSTALL = "pip install cfn-lint==1.51.0 aws-sam-translator==1.110.0"
ARTIFACT_BUCKET = "sam-package-artifacts"
REGION = "us-east-1"


def main(argv):
    parser = _Parser(
        description="Lint a SAM template with cfn-lint and translate it with AWS's SAM translator.")
    parser.add_argument("template", help="the SAM template (YAML or JSON)")
    parser.add_argument("--out", help="write the translated CloudFormation template here (JSON)")
    parser.add_argument("--param", action="append", default=[], metavar="K=V",
                        help="a parameter value for the translation (repeatable)")
    args = parser.parse_args(argv)

    params = {}
    for kv in args.param:
        if "=" not in kv or not kv.split("=", 1)[0]:
            parser.error(f"--param wants NAME=VALUE, got {kv!r}")
        name, value = kv.split("=", 1)
        params[name] = value

    try:
        import cfnlint  # noqa: F401
        import samtranslator  # noqa: F401
    except ImportError as e:
        print(f"check-template: the template tools are not installed ({e.name} is missing).\n"
              f"Install them into this Python ({sys.executable}) with:\n  {INSTALL}",
              file=sys.stderr)
        return 2

    template_path = Path(args.template)
    if not template_path.is_file():
        print(f"check-template: no template at {template_path}", file=sys.stderr)
        return 1

    findings, notes = lint(template_path)
    translated, translate_findings, translate_notes = translate(template_path, params)
    findings += translate_findings
    notes += translate_notes

    for note in notes:
        print(f"note: {note}")
    for finding in findings:
        print(f"finding: {finding}")
    if translated is not None and args.out:
        Path(args.out).write_text(json.dumps(translated, indent=2, sort_keys=True) + "\n")
    if findings:
        print(f"check-template: {len(findings)} finding(s) in {template_path}", file=sys.stderr)
        return 1
    return 0


class _Parser(argparse.ArgumentParser):
    """Bad usage exits 1, not argparse's 2: here 2 means that the tools are missing."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"check-template: {message}", file=sys.stderr)
        sys.exit(1)


def lint(template_path):
    from cfnlint.api import lint_file
    from cfnlint.config import ManualArgs

    matches = lint_file(template_path, config=ManualArgs(regions=[REGION]))
    findings, notes = [], []
    for m in matches:
        text = f"cfn-lint {m.rule.id} {m.filename}:{m.linenumber}:{m.columnnumber} {m.message}"
        severity = str(getattr(m.rule, "severity", "error")).lower()
        (notes if severity.startswith("info") else findings).append(text)
    return findings, notes


def translate(template_path, params):
    """Translates like CloudFormation's AWS::Serverless transform; returns (template, findings, notes)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    from cfnlint.data import Serverless
    from cfnlint.decode.decode import decode
    from cfnlint.decode.utils import convert_dict
    from cfnlint.helpers import load_resource
    from samtranslator.parser import parser as sam_parser
    from samtranslator.public.exceptions import InvalidDocumentException
    from samtranslator.translator.translator import Translator

    template, errors = decode(str(template_path))
    if errors or template is None:
        return None, [f"cannot read the template: {e.message}" for e in errors or []], []
    template = convert_dict(template)
    notes = []
    sam = copy.deepcopy(_plain(template))
    for logical_id, resource in (sam.get("Resources") or {}).items():
        props = resource.get("Properties") if isinstance(resource, dict) else None
        if resource.get("Type") == "AWS::Serverless::Function" and isinstance(props, dict):
            code_uri = props.get("CodeUri", (sam.get("Globals", {}).get("Function", {}) or {}).get("CodeUri"))
            if isinstance(code_uri, str) and not code_uri.startswith("s3://"):
                props["CodeUri"] = _packaged(template_path, code_uri, logical_id, notes)
    globals_function = (sam.get("Globals") or {}).get("Function") or {}
    if isinstance(globals_function.get("CodeUri"), str) and not globals_function["CodeUri"].startswith("s3://"):
        globals_function["CodeUri"] = _packaged(template_path, globals_function["CodeUri"], "Globals", [])

    try:
        translator = Translator(
            managed_policy_map=load_resource(Serverless, "ManagedPolicies.json"),
            sam_parser=sam_parser.Parser())
        translated = translator.translate(sam_template=sam, parameter_values=dict(params))
    except InvalidDocumentException as e:
        return None, [f"SAM translator: {cause.message}" for cause in e.causes], notes
    except Exception as e:  # the translator's other failures are findings too, with their text
        return None, [f"SAM translator: {type(e).__name__}: {e}"], notes
    return json.loads(json.dumps(translated)), [], notes


def _packaged(template_path, code_uri, who, notes):
    """The S3 URI `sam package` gives a local artifact: the MD5 of its content as the key."""
    local = (template_path.parent / code_uri).resolve()
    if local.is_file():
        digest = hashlib.md5(local.read_bytes()).hexdigest()
        return f"s3://{ARTIFACT_BUCKET}/{digest}"
    note = f"CodeUri {code_uri} is not built; translated with a placeholder key (mvn -B -ntp package builds it)"
    if note not in notes:
        notes.append(note)
    return f"s3://{ARTIFACT_BUCKET}/unbuilt/{code_uri.strip('/')}"


def _plain(value):
    """cfn-lint's decoded nodes as plain dicts, lists and strings (the translator copies and compares them)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

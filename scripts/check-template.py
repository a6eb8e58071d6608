#!/usr/bin/env python3
"""Lint and translate a SAM template with AWS's own tools: cfn-lint, then the SAM translator.

A minimal stand-in with the interface scripts/deploy-check relies on (the full check replaces it):
    check-template.py TEMPLATE [--out FILE]
writes the translated CloudFormation (JSON) to FILE; exits 0 when both tools are clean, 1 on any
finding (an error or warning of cfn-lint, a translation error), 2 when a tool is missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

INSTALL = "python3 -m pip install cfn-lint==1.51.0 aws-sam-translator==1.110.0"


class NoManagedPolicies:
    """The translator looks up AWS managed policy names in IAM; the template names none by name."""

    def load(self):
        return {}


def as_packaged(sam):
    """Local artifact paths as `sam package` leaves them: S3 locations (as cfn-lint does too)."""
    functions = [sam.get("Globals", {}).get("Function", {})]
    functions += [r.get("Properties", {}) for r in sam.get("Resources", {}).values()
                  if r.get("Type") == "AWS::Serverless::Function"]
    for properties in functions:
        uri = properties.get("CodeUri")
        if isinstance(uri, str) and not uri.startswith("s3://"):
            properties["CodeUri"] = f"s3://artifacts/{uri}"
    return sam


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template")
    parser.add_argument("--out", help="where to write the translated template (JSON)")
    args = parser.parse_args()

    cfn_lint = shutil.which("cfn-lint", path=os.path.dirname(sys.executable)) or shutil.which("cfn-lint")
    try:
        from samtranslator.translator.transform import transform
        from samtranslator.yaml_helper import yaml_parse
    except ImportError:
        cfn_lint = None
    if cfn_lint is None:
        print(f"check-template: cfn-lint or aws-sam-translator is missing; install them: {INSTALL}", file=sys.stderr)
        return 2

    # cfn-lint's exit code is a bit mask: 2 errors, 4 warnings, 8 informational findings.
    lint = subprocess.run([cfn_lint, args.template])
    if lint.returncode != 0:
        print(f"check-template: cfn-lint found problems in {args.template} (exit {lint.returncode})", file=sys.stderr)
        return 1

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(args.template, encoding="utf-8") as f:
        sam = yaml_parse(f.read())
    try:
        translated = transform(as_packaged(sam), {}, NoManagedPolicies())
    except Exception as e:  # the translator's InvalidDocumentException lists every cause
        print(f"check-template: the SAM translator refused {args.template}: {e}", file=sys.stderr)
        return 1
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(translated, f, indent=2, sort_keys=True)
    print(f"check-template: {args.template} clean; {len(translated.get('Resources', {}))} resources after translation"
          + (f", written to {args.out}" if args.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

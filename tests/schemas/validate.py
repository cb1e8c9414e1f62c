"""Validates JSON instances against a JSON Schema with Python `jsonschema`.

Usage: python3 validate.py SCHEMA.json < instances.json

Standard input is a JSON array of instances; standard output is a JSON array
with, per instance, the list of error messages (empty when it is valid).
The schema itself is checked against its metaschema first (exit 3 if it is
not a valid schema). Exit 4 means `jsonschema` is not installed.
"""

import json
import sys

try:
    import jsonschema
    from jsonschema import validators
except ImportError:
    print("the Python package jsonschema is not installed", file=sys.stderr)
    sys.exit(4)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        print(f"not a valid schema: {e.message} at {list(e.absolute_path)}", file=sys.stderr)
        sys.exit(3)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    instances = json.load(sys.stdin)
    out = []
    for instance in instances:
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        out.append(
            [f"{e.message} at /{'/'.join(str(p) for p in e.absolute_path)}" for e in errors]
        )
    json.dump(out, sys.stdout)


main()

#!/usr/bin/env python3
"""Build the JSON Schema that tests/e2e/ocsf_validate.py checks exported events with.

It compiles one OCSF event class with its profiles from the OCSF schema
repository's own source files (github.com/ocsf/ocsf-schema), read at a tag
through `git show`, the way the OCSF server compiles them: the class's
`extends` chain merged (base_event, category, class), `$include`d files
merged (attributes from a profile file only when that profile is applied to
the event), each attribute's type, array-ness and enum taken from
dictionary.json, then refined by the class or object. Objects become `$defs`
(their own `extends` chain, every profile of theirs allowed), with their
required attributes and `at_least_one` / `just_one` constraints. Unknown
attributes are refused (`additionalProperties: false`), except in the
generic `object` type (`unmapped`). Regular expressions of the string types
are left out (they are written for Elixir, not for JSON Schema's dialect).

No PyPI or npm package validates OCSF 1.8 events (checked 2026-12-06:
`ocsf-validator` checks the schema repository itself, `py-ocsf-models` and
`ocsf-emitter` stop at 1.5.0, `ocsf-schema-compiler` needs Python 3.14), so
the schema is built here and checked with `jsonschema`.

    generate_schema.py GIT_DIR TAG > api_activity_security_control.schema.json
"""

import json
import subprocess
import sys

CLASS_FILE = "events/application/api_activity.json"
PROFILES = ["security_control"]

BASE_TYPES = {
    "string_t": {"type": "string"},
    "integer_t": {"type": "integer"},
    "long_t": {"type": "integer"},
    "float_t": {"type": "number"},
    "boolean_t": {"type": "boolean"},
    "json_t": {},
}


def main():
    git_dir, tag = sys.argv[1], sys.argv[2]

    def show(path):
        return json.loads(
            subprocess.run(
                ["git", "--git-dir", git_dir, "show", f"{tag}:{path}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )

    commit = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-list", "-n1", tag],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", tag],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    version = show("version.json")["version"]
    dictionary = show("dictionary.json")
    dict_attrs = dictionary["attributes"]
    types = dictionary["types"]["attributes"]
    categories = show("categories.json")["attributes"]

    objects = {}
    events = {}
    for path in listing:
        if path.startswith("objects/") and path.endswith(".json"):
            o = show(path)
            objects[o["name"]] = o
        elif path.startswith("events/") and path.endswith(".json"):
            e = show(path)
            events[e["name"]] = e

    def own_attributes(defn):
        """A definition's attributes with its `$include`s merged, each
        tagged with the profile it comes from (None: always present)."""
        merged = {}
        for inc in defn.get("attributes", {}).get("$include", []):
            included = show(inc)
            profile = included["name"] if inc.startswith("profiles/") else None
            for name, attr in included.get("attributes", {}).items():
                if name == "$include":
                    continue
                merged[name] = dict(attr, _profile=profile)
        for name, attr in defn.get("attributes", {}).items():
            if name == "$include":
                continue
            base = merged.get(name, {"_profile": None})
            refined = dict(base)
            refined.update(attr)
            if "profile" in attr:  # an explicit `profile: null` unbinds it
                refined["_profile"] = attr["profile"]
            if "enum" in base and "enum" in attr:
                refined["enum"] = {**base["enum"], **attr["enum"]}
            merged[name] = refined
        return merged

    def chain_attributes(defn, table):
        chain = []
        while defn is not None:
            chain.append(defn)
            parent = defn.get("extends")
            defn = table.get(parent) if parent else None
        attrs = {}
        constraints = {}
        for d in reversed(chain):
            for name, attr in own_attributes(d).items():
                prev = attrs.get(name, {})
                refined = dict(prev)
                refined.update(attr)
                if "enum" in prev and "enum" in attr:
                    refined["enum"] = {**prev["enum"], **attr["enum"]}
                attrs[name] = refined
            constraints.update(d.get("constraints", {}))
        return attrs, constraints

    defs = {}

    def type_schema(type_name):
        seen = type_name
        while seen not in BASE_TYPES:
            seen = types[seen]["type"]
        return dict(BASE_TYPES[seen])

    def attribute_schema(name, attr):
        entry = dict(dict_attrs.get(name, {}))
        entry.update({k: v for k, v in attr.items() if not k.startswith("_")})
        if "enum" in dict_attrs.get(name, {}) and "enum" in attr:
            entry["enum"] = {**dict_attrs[name]["enum"], **attr["enum"]}
        t = entry.get("type")
        if t in objects:
            object_def(t)
            schema = {"$ref": f"#/$defs/{t}"}
        else:
            schema = type_schema(t)
        if "enum" in entry and t in ("integer_t", "long_t", "string_t"):
            keys = list(entry["enum"].keys())
            schema["enum"] = [int(k) for k in keys] if t != "string_t" else keys
        if entry.get("is_array"):
            schema = {"type": "array", "items": schema}
        return schema, entry.get("requirement")

    def object_schema(attrs, constraints, strict, applied=None):
        props = {}
        required = []
        for name, attr in sorted(attrs.items()):
            profile = attr.get("_profile")
            if applied is not None and profile is not None and profile not in applied:
                continue
            schema, requirement = attribute_schema(name, attr)
            props[name] = schema
            if requirement == "required":
                required.append(name)
        out = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        if strict:
            out["additionalProperties"] = False
        all_of = []
        for kind, keyword in (("at_least_one", "anyOf"), ("just_one", "oneOf")):
            names = [n for n in constraints.get(kind, []) if n in props]
            if names:
                all_of.append({keyword: [{"required": [n]} for n in names]})
        if all_of:
            out["allOf"] = all_of
        return out

    def object_def(name):
        if name in defs:
            return
        defs[name] = {}  # placeholder against recursion
        attrs, constraints = chain_attributes(objects[name], objects)
        defs[name] = object_schema(attrs, constraints, strict=name != "object")

    event = events[show(CLASS_FILE)["name"]]
    attrs, constraints = chain_attributes(event, events)
    category_uid = categories[event["category"] if "category" in event else "application"]["uid"]
    for d in (event, events.get(event.get("extends"))):
        if d and "category" in d:
            category_uid = categories[d["category"]]["uid"]
            break
    class_uid = category_uid * 1000 + event["uid"]
    schema = object_schema(attrs, constraints, strict=True, applied=set(PROFILES))
    props = schema["properties"]
    activity_ids = props["activity_id"]["enum"]
    props["class_uid"] = {"const": class_uid}
    props["category_uid"] = {"const": category_uid}
    props["type_uid"] = {"enum": [class_uid * 100 + a for a in activity_ids]}
    out = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": (
            f"OCSF {version} class {event['name']} ({class_uid}) with profiles "
            f"{', '.join(PROFILES)}; generated by generate_schema.py from "
            f"github.com/ocsf/ocsf-schema tag {tag} (commit {commit})"
        ),
        "title": f"OCSF {version} {event['caption']} + {', '.join(PROFILES)}",
        **schema,
        "$defs": dict(sorted(defs.items())),
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

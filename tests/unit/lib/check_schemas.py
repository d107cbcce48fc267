#!/usr/bin/python3
"""Checks proto/schemas against proto/golden (proto/PROTOCOL.md).

- every schema is a valid JSON Schema (draft 7);
- every golden message validates against the schema of its type (the file
  name's part before the first '-'), and its `type` member agrees;
- every golden object (golden/objects/<kind>.json) validates against its
  kind's schema;
- every message type has at least one golden file;
- known-bad messages and objects are rejected.

Usage: check_schemas.py PROTO_DIR   (the repository's proto/ directory)
Runs with Debian 12's python3-jsonschema (4.10): Draft7Validator + RefResolver.
"""
import copy
import json
import os
import sys

import jsonschema
from jsonschema import Draft7Validator, RefResolver

MESSAGE_TYPES = ["hello", "welcome", "desired", "desiredAck", "report", "ack",
                 "resync", "ping", "pong", "error", "certificateRequest",
                 "certificate", "certificateRefused"]
OBJECT_SCHEMAS = ["node", "collectorconfig", "healthrule", "egresspolicy", "event"]


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Checker:
    def __init__(self, proto_dir):
        self.proto = proto_dir
        self.schemas = {}
        self.store = {}
        self.failures = []
        sdir = os.path.join(proto_dir, "schemas")
        for name in sorted(os.listdir(sdir)):
            if name.endswith(".json"):
                s = load(os.path.join(sdir, name))
                self.schemas[name[:-5]] = s
                self.store[s["$id"]] = s

    def fail(self, what):
        self.failures.append(what)
        print("FAIL: " + what)

    def validator(self, schema_name):
        s = self.schemas[schema_name]
        resolver = RefResolver(base_uri=s["$id"], referrer=s, store=self.store)
        return Draft7Validator(s, resolver=resolver)

    def errors(self, schema_name, instance):
        return sorted(self.validator(schema_name).iter_errors(instance),
                      key=lambda e: list(e.absolute_path))

    def check_schemas(self):
        expected = set(MESSAGE_TYPES + OBJECT_SCHEMAS + ["common"])
        missing = expected - set(self.schemas)
        if missing:
            self.fail("missing schemas: %s" % sorted(missing))
        for name, s in self.schemas.items():
            try:
                Draft7Validator.check_schema(s)
            except jsonschema.exceptions.SchemaError as e:
                self.fail("schemas/%s.json is not a valid draft-7 schema: %s" % (name, e.message))

    def expect_valid(self, schema_name, instance, label):
        errs = self.errors(schema_name, instance)
        for e in errs:
            self.fail("%s: %s at /%s" % (label, e.message,
                                         "/".join(str(p) for p in e.absolute_path)))
        if not errs:
            print("ok: %s valid against %s.json" % (label, schema_name))

    def expect_invalid(self, schema_name, instance, label):
        if self.errors(schema_name, instance):
            print("ok: %s rejected by %s.json" % (label, schema_name))
        else:
            self.fail("%s: accepted by %s.json but must be rejected" % (label, schema_name))

    def check_golden(self):
        gdir = os.path.join(self.proto, "golden")
        seen = set()
        for name in sorted(os.listdir(gdir)):
            if not name.endswith(".json"):
                continue
            mtype = name[:-5].split("-", 1)[0]
            label = "golden/" + name
            if mtype not in MESSAGE_TYPES:
                self.fail("%s: file name does not start with a message type" % label)
                continue
            msg = load(os.path.join(gdir, name))
            if msg.get("type") != mtype:
                self.fail("%s: type %r does not match the file name" % (label, msg.get("type")))
            seen.add(mtype)
            self.expect_valid(mtype, msg, label)
        for t in MESSAGE_TYPES:
            if t not in seen:
                self.fail("no golden file for message type %s" % t)
        odir = os.path.join(gdir, "objects")
        kinds = set()
        for name in sorted(os.listdir(odir)):
            if not name.endswith(".json"):
                continue
            kind = name[:-5]
            if kind not in self.schemas:
                self.fail("golden/objects/%s: no schema %s.json" % (name, kind))
                continue
            kinds.add(kind)
            self.expect_valid(kind, load(os.path.join(odir, name)), "golden/objects/" + name)
        for k in ["node", "collectorconfig", "healthrule", "egresspolicy"]:
            if k not in kinds:
                self.fail("no golden object for %s" % k)

    def check_bad(self):
        g = os.path.join(self.proto, "golden")
        hello = load(os.path.join(g, "hello-basic.json"))
        snap = load(os.path.join(g, "report-snapshot.json"))
        patch = load(os.path.join(g, "report-patch.json"))
        event = load(os.path.join(g, "report-event.json"))
        full = load(os.path.join(g, "desired-full.json"))
        delta = load(os.path.join(g, "desired-delta.json"))
        cc = load(os.path.join(g, "objects", "collectorconfig.json"))
        ep = load(os.path.join(g, "objects", "egresspolicy.json"))
        hr = load(os.path.join(g, "objects", "healthrule.json"))

        def mut(base, fn):
            m = copy.deepcopy(base)
            fn(m)
            return m

        bad = [
            ("hello", mut(hello, lambda m: m.update(protocolVersion=3)), "hello protocolVersion 3"),
            ("hello", mut(hello, lambda m: m.update(node="Edge_01")), "hello invalid node name"),
            ("hello", mut(hello, lambda m: m.update(nextSeq="17")), "hello nextSeq as string"),
            ("hello", mut(hello, lambda m: m.update(nextSeq=0)), "hello nextSeq 0"),
            ("hello", mut(hello, lambda m: m.pop("bootId")), "hello without bootId"),
            ("hello", mut(hello, lambda m: m["labels"].update(site=3)), "hello label value not a string"),
            ("hello", mut(hello, lambda m: m.update(streamId="")), "hello empty streamId"),
            ("hello", mut(hello, lambda m: m.update(streamId="a/b")), "hello streamId with a slash"),
            ("report", mut(patch, lambda m: m.pop("baseSeq")), "patch without baseSeq"),
            ("report", mut(snap, lambda m: m.update(seq="17")), "report seq as string"),
            ("report", mut(snap, lambda m: m.update(reportType="full")), "report unknown reportType"),
            ("report", mut(snap, lambda m: m.update(time="2026-11-30T04:07:12+02:00")), "report time not in Z"),
            ("report", mut(snap, lambda m: m["body"]["status"].pop("nodeInfo")), "snapshot without nodeInfo"),
            ("report", mut(snap, lambda m: m["body"]["status"]["collectors"][0].update(backend="kprobe")),
             "snapshot with unknown collector backend"),
            ("report", mut(snap, lambda m: m["body"]["status"]["usage"]["cpu"].update(utilization=1.5)),
             "snapshot with utilization > 1"),
            ("report", mut(event, lambda m: m["body"].update(type="Info")), "event of type Info"),
            ("report", mut(event, lambda m: m["body"].pop("involvedObject")), "event without involvedObject"),
            ("desired", mut(full, lambda m: m["objects"][0]["spec"].update(intervalSeconds=0)),
             "desired CollectorConfig intervalSeconds 0"),
            ("desired", mut(full, lambda m: m["objects"][0]["metadata"].pop("uid")),
             "desired object without uid"),
            ("desired", mut(delta, lambda m: m["deleted"][0].pop("uid")), "desired deleted without uid"),
            ("desired", mut(delta, lambda m: m["deleted"][0].update(resourceVersion="44")),
             "desired deleted resourceVersion as string"),
            ("desired", mut(full, lambda m: m.update(objects={})), "desired objects not an array"),
            ("welcome", {"type": "welcome", "node": "edge-01", "controllerVersion": "0.1.0",
                         "ackedSeq": -1, "heartbeatSeconds": 20, "maxMessageBytes": 1048576},
             "welcome ackedSeq -1"),
            ("ack", {"type": "ack", "seq": 1.5}, "ack with fractional seq"),
            ("ack", {"type": "ack", "seq": 2 ** 53}, "ack seq above 2^53-1"),
            ("ping", {"type": "ping"}, "ping without time"),
            ("error", {"type": "error", "code": "Oops", "message": "x"}, "error with unknown code"),
            ("collectorconfig", mut(cc, lambda m: m["spec"].update(collectors=["cpu", "gpu"])),
             "CollectorConfig with unknown collector"),
            ("collectorconfig", mut(cc, lambda m: m["spec"].update(extra=1)),
             "CollectorConfig with unknown spec member"),
            ("collectorconfig", mut(cc, lambda m: m.update(apiVersion="v1")),
             "CollectorConfig with wrong apiVersion"),
            ("healthrule", mut(cc, lambda m: m.update(kind="HealthRule") or
                               m["spec"].update(nodeSelector={"matchExpressions": []})),
             "HealthRule with unsupported nodeSelector member"),
            ("egresspolicy", mut(ep, lambda m: m["spec"].update(defaultAction="allow")),
             "EgressPolicy with unknown spec member"),
            ("egresspolicy", mut(ep, lambda m: m["spec"]["rules"][0].update(protocol="tcp")),
             "EgressPolicy with lower-case protocol"),
            ("egresspolicy", mut(ep, lambda m: m["spec"]["rules"][0].update(ports=[0])),
             "EgressPolicy with port 0"),
            ("egresspolicy", mut(ep, lambda m: m["spec"].pop("action")),
             "EgressPolicy without action"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(metric="foo")),
             "HealthRule with unknown metric"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(operator=">")),
             "HealthRule with operator >"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(**{"for": "-5s"})),
             "HealthRule with negative for"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(**{"for": "5"})),
             "HealthRule with for without unit"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(conditionType="Ready")),
             "HealthRule setting Ready"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(conditionType="many_procs")),
             "HealthRule with conditionType not CamelCase"),
            ("healthrule", mut(hr, lambda m: m["spec"].pop("threshold")),
             "HealthRule without threshold"),
            ("healthrule", mut(hr, lambda m: m["spec"].update(severity="critical")),
             "HealthRule with unknown severity"),
        ]
        for schema_name, inst, label in bad:
            self.expect_invalid(schema_name, inst, label)


def main():
    if len(sys.argv) != 2:
        print("usage: check_schemas.py PROTO_DIR", file=sys.stderr)
        return 2
    c = Checker(sys.argv[1])
    c.check_schemas()
    c.check_golden()
    c.check_bad()
    if c.failures:
        print("%d failure(s)" % len(c.failures))
        return 1
    print("all schema checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

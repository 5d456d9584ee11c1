import pytest

import mesa_memory as mesa

GOOD = """policy "p"
rule errors when query has words ["error", "failed"] -> select {T, R}
default {S, V}
"""


def test_check_reports_diagnostics_as_objects():
    assert mesa.check(GOOD) == []
    bad = 'policy "p"\nrule r when query has wrds ["x"] -> select {T}\ndefault {S}\n'
    ds = mesa.check(bad, name="bad.mesa")
    assert ds and ds[0].severity == "error"
    d = ds[0]
    assert d.code.startswith("E") and d.line == 2 and d.column >= 1 and d.file == "bad.mesa"
    assert d.message


def test_format_compile_and_load_from_module():
    ugly = 'policy "p"\nrule   errors when query has words ["error","failed"]->select {T,R}\ndefault {S,V}\n'
    pretty = mesa.format(ugly)
    assert pretty != ugly and mesa.format(pretty) == pretty
    module = mesa.compile(GOOD)
    assert module[:4] == b"\0asm"
    p = mesa.Policy.from_module(module)
    s = p.select("Why did it fail with an error?")
    assert s.structures == ["T", "R"] and s.rule == "errors" and s.bits == 2 | 16
    assert p.select("What is the capital?").structures == ["S", "V"]


def test_select_and_explain_agree_across_engines(quickstart):
    wasm = mesa.Policy.load(quickstart)
    interp = mesa.Policy.load(quickstart, engine="interp")
    for q, previews in [
        ("Why did the build fail?", None),
        ("What happened at step 12?", {"R.tokens": 5000}),
        ("Which file was opened?", {"R.tokens": 10}),
    ]:
        a = wasm.select(q, domain="swe", previews=previews)
        b = interp.select(q, domain="swe", previews=previews)
        assert (a.structures, a.rule) == (b.structures, b.rule)
    text = wasm.explain("Why did the build fail?")
    assert "causal" in text
    assert wasm.source and "quickstart" in wasm.source
    assert wasm.module()[:4] == b"\0asm"


def test_bad_policies_raise_policy_error(tmp_path):
    with pytest.raises(mesa.PolicyError) as err:
        mesa.Policy.from_source('policy "p"\nrule r when query has -> select {T}\n')
    assert err.value.code == "check" and err.value.diagnostics
    assert isinstance(err.value.diagnostics[0], mesa.Diagnostic)
    with pytest.raises(mesa.PolicyError) as err:
        mesa.Policy.from_module(b"\0asm\x01\0\0\0")
    assert err.value.code == "load"
    with pytest.raises(mesa.PolicyError):
        mesa.Policy.from_module(b"not wasm at all")
    with pytest.raises(mesa.PolicyError):
        mesa.compile("this is not a policy")
    with pytest.raises(mesa.PolicyError):
        mesa.format("rule when ->")
    with pytest.raises(mesa.NotFoundError):
        mesa.Policy.load(tmp_path / "missing.mesa")
    with pytest.raises(mesa.PolicyError) as err:
        mesa.Policy.from_module(mesa.compile(GOOD)).explain("q")
    assert err.value.code == "needs-source"
    with pytest.raises(mesa.InvalidInputError):
        mesa.Policy.from_source(GOOD, engine="jit")
    with pytest.raises(mesa.InvalidInputError):
        mesa.Policy.from_source(GOOD).select("q", previews={"Q.tokens": 1})


def test_select_equals_mesa_run(mesa_bin, quickstart):
    import json
    import subprocess

    p = mesa.Policy.load(quickstart)
    for q in ["Why did the build fail?", "What happened at step 4?", "Which file?"]:
        out = subprocess.run(
            [mesa_bin, "run", str(quickstart), "--query", q, "--format", "json"],
            check=True, capture_output=True, text=True,
        ).stdout
        cli = json.loads(out)
        s = p.select(q)
        assert (s.structures, s.bits, s.rule) == (cli["mask"], cli["bits"], cli["rule"])

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


def test_a_trade_reads_the_shown_counts_in_both_engines():
    src = 'policy "t"\ndefault all\ntrade words at 0.35\n'
    tokens = {"S.tokens": 100, "T.tokens": 200, "G.tokens": 300, "V.tokens": 400, "R.tokens": 1000}
    per = [5, 3, 1, 0, 1]  # words each structure shows, none shared
    counts = [sum(per[b] for b in range(5) if (k + 1) >> b & 1) for k in range(31)]
    for engine in ("wasm", "interp"):
        p = mesa.Policy.from_source(src, engine=engine)
        assert p.select("q", previews=tokens, shown={"words": counts}).structures == ["S", "T", "G"]
        # Without counts the trade has nothing to weigh and keeps the mask.
        assert p.select("q", previews=tokens).structures == ["S", "T", "G", "V", "R"]
    assert "trade words at 0.35" in mesa.Policy.from_source(src).explain("q", previews=tokens, shown={"words": counts})
    with pytest.raises(mesa.InvalidInputError) as err:
        mesa.Policy.from_source(src).select("q", shown={"words": [1, 2]})
    assert "31" in str(err.value)
    with pytest.raises(mesa.InvalidInputError):
        mesa.Policy.from_source(src).select("q", shown={"lines": counts})


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

//! docs/ERRORS.md lists every diagnostic code with an example; this test
//! builds each example, checks it, and asserts that the example's code is
//! reported. It also asserts that every code is documented, with its title.

use mesa_compiler::check_bytes;
use mesa_grammar::Code;

struct Example {
    code: String,
    title: String,
    info: String,
    body: String,
}

fn examples() -> Vec<Example> {
    let doc = include_str!("../../docs/ERRORS.md");
    let mut out = Vec::new();
    let mut lines = doc.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(heading) = line.strip_prefix("## ") else {
            continue;
        };
        let (code, title) = heading.split_once(": ").expect("`## CODE: title`");
        // The first fenced block after the heading is the example.
        let info = loop {
            let l = lines.next().expect("a code block after each heading");
            if let Some(info) = l.strip_prefix("```") {
                break info.to_string();
            }
        };
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        out.push(Example {
            code: code.into(),
            title: title.into(),
            info,
            body,
        });
    }
    out
}

/// Turns an example block into the bytes it stands for.
fn build(info: &str, body: &str) -> Vec<u8> {
    let mut words = info.split_whitespace();
    assert_eq!(words.next(), Some("mesa"), "example blocks are ```mesa");
    match words.next() {
        None => body.as_bytes().to_vec(),
        Some("bytes") => {
            let mut out = Vec::new();
            let b = body.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).expect("hex");
                    out.push(u8::from_str_radix(hex, 16).expect("hex byte"));
                    i += 4;
                } else {
                    out.push(b[i]);
                    i += 1;
                }
            }
            out
        }
        Some(rep) => {
            let n: usize = rep
                .strip_prefix("repeat=")
                .expect("repeat=N")
                .parse()
                .expect("N");
            let mut out = String::new();
            let mut rest = body;
            while let Some(start) = rest.find("<<") {
                out.push_str(&rest[..start]);
                let end = rest[start..].find(">>").expect("closing >>") + start;
                let region = &rest[start + 2..end];
                for i in 0..n {
                    out.push_str(&region.replace("{i}", &i.to_string()));
                }
                rest = &rest[end + 2..];
            }
            out.push_str(rest);
            out.into_bytes()
        }
    }
}

#[test]
fn every_code_is_documented_with_its_title() {
    let examples = examples();
    for code in Code::ALL {
        let ex = examples.iter().find(|e| e.code == code.as_str());
        let ex = ex.unwrap_or_else(|| panic!("{code} is not in docs/ERRORS.md"));
        assert_eq!(ex.title, code.title(), "title of {code}");
    }
    assert_eq!(
        examples.len(),
        Code::ALL.len(),
        "ERRORS.md lists a code that does not exist"
    );
}

#[test]
fn every_example_triggers_its_code() {
    for ex in examples() {
        let bytes = build(&ex.info, &ex.body);
        let checked = check_bytes(&bytes);
        let codes: Vec<&str> = checked
            .diagnostics
            .iter()
            .map(|d| d.code.as_str())
            .collect();
        assert!(
            codes.contains(&ex.code.as_str()),
            "{}: got {codes:?}",
            ex.code
        );
        let is_error = ex.code.starts_with('E');
        assert_eq!(
            checked.program.is_none(),
            is_error,
            "{}: a warning alone must not reject",
            ex.code
        );
    }
}

use std::time::Instant;
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\naction = \"deny\"\ntool = \"svc{i}_*\"\nargs.path = \"/data/{i}/**\"\n"
        ));
    }
    let t = Instant::now();
    let _: toml::Table = toml::from_str(&text).unwrap();
    println!("toml parse: {:?}", t.elapsed());
    let t = Instant::now();
    let globs: Vec<_> = (0..n).map(|i| clawai_policy::glob::Glob::new(&format!("svc{i}_*")).unwrap()).collect();
    println!("{n} globs: {:?}", t.elapsed());
    let t = Instant::now();
    let set = regex::RegexSet::new(globs.iter().map(|g| g.regex_source())).unwrap();
    println!("regexset of {n}: {:?}", t.elapsed());
    let t = Instant::now();
    let _ = set.is_match("svc5_x");
    println!("first match: {:?}", t.elapsed());
    let t = Instant::now();
    let p = clawai_policy::load_str(&text, clawai_policy::Format::Toml, "x").unwrap();
    println!("load: {:?} ({} rules)", t.elapsed(), p.rules().len());
}

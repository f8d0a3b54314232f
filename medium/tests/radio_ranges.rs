//! The medium's propagation models reach the ranges topologies/radio.py computes, for the presets
//! and overrides of `tests/fixtures/radio_ranges.json` (written by `python3 -m topologies.radio`).

use manet_medium::params::RadioParams;
use serde_json::Value;

#[test]
fn ranges_agree_with_python() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/radio_ranges.json");
    let text = std::fs::read_to_string(path).expect("read the fixture");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("fixture is JSON");
    assert!(cases.len() >= 5, "fixture has {} cases", cases.len());
    for case in &cases {
        let preset = case["preset"].as_str().expect("preset");
        let p = RadioParams::preset(preset)
            .and_then(|p| p.with_overrides(&case["overrides"]))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        for (got, key) in [(p.range_m(), "range_m"), (p.cs_range_m(), "cs_range_m")] {
            let want = case[key].as_f64().expect("number");
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "{preset} {}: {key} medium {got} m, topologies/radio.py {want} m",
                case["overrides"]
            );
        }
    }
}

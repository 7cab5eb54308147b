//! The XPBuffer policy's key (`pm.xpbuffer_policy`): `write_back` unless
//! set, `write_through` accepted, anything else rejected with the key's
//! name and the accepted values.

use memtamer_sim::config::{Platform, XpBufferPolicy};
use std::collections::BTreeMap;

const AHN: &str = include_str!("../builtin/platforms/ahn.toml");

fn set(v: toml::Value) -> Result<Platform, String> {
    let mut o = BTreeMap::new();
    o.insert("pm.xpbuffer_policy".to_string(), v);
    Platform::parse_with("ahn.toml", AHN, &o).map_err(|e| e.to_string())
}

#[test]
fn xpbuffer_policy_defaults_to_write_back_and_accepts_write_through() {
    let p = Platform::parse("ahn.toml", AHN).unwrap();
    assert_eq!(p.pm.xpbuffer_policy, XpBufferPolicy::WriteBack);
    let s = |v: &str| set(toml::Value::String(v.into()));
    assert_eq!(
        s("write_through").unwrap().pm.xpbuffer_policy,
        XpBufferPolicy::WriteThrough
    );
    assert_eq!(
        s("write_back").unwrap().pm.xpbuffer_policy,
        XpBufferPolicy::WriteBack
    );
    for bad in [
        toml::Value::String("write-through".into()),
        toml::Value::Integer(1),
    ] {
        let e = set(bad).unwrap_err();
        assert!(e.contains("xpbuffer_policy"), "{e}");
    }
    let e = s("writethrough").unwrap_err();
    assert!(e.contains("write_through"), "{e}");
}

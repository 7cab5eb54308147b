//! The AIT partition map's key (`pm.ait_block_bytes`): accepted as 0 or a
//! power of two of at least one XPLine, rejected otherwise with its name;
//! and the RMW cost's key (`pm.rmw_read`): `media` unless set, `in_write`
//! accepted, anything else rejected.

use memtamer_sim::config::{Platform, RmwRead};
use std::collections::BTreeMap;

const PATS: &str = include_str!("../builtin/platforms/pats.toml");

fn with_ait(bytes: i64) -> Result<Platform, String> {
    let mut o = BTreeMap::new();
    o.insert(
        "pm.ait_block_bytes".to_string(),
        toml::Value::Integer(bytes),
    );
    Platform::parse_with("pats.toml", PATS, &o).map_err(|e| e.to_string())
}

#[test]
fn ait_block_bytes_defaults_off_and_rejects_non_powers_of_two() {
    let p = Platform::parse("pats.toml", PATS).unwrap();
    assert_eq!(p.pm.ait_block_bytes, 0);
    assert_eq!(with_ait(4096).unwrap().pm.ait_block_bytes, 4096);
    assert!(with_ait(0).is_ok());
    for bad in [1000, 128] {
        let e = with_ait(bad).unwrap_err();
        assert!(e.contains("pm.ait_block_bytes"), "{e}");
    }
}

#[test]
fn rmw_read_defaults_to_a_media_read_and_accepts_in_write() {
    let p = Platform::parse("pats.toml", PATS).unwrap();
    assert_eq!(p.pm.rmw_read, RmwRead::Media);
    let set = |v: &str| {
        let mut o = BTreeMap::new();
        o.insert("pm.rmw_read".to_string(), toml::Value::String(v.into()));
        Platform::parse_with("pats.toml", PATS, &o).map_err(|e| e.to_string())
    };
    assert_eq!(set("in_write").unwrap().pm.rmw_read, RmwRead::InWrite);
    assert_eq!(set("media").unwrap().pm.rmw_read, RmwRead::Media);
    let e = set("in-write").unwrap_err();
    assert!(e.contains("in_write"), "{e}");
}

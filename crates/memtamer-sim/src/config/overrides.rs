//! `--set KEY=VALUE` overrides on a scenario's TOML tree: dotted keys,
//! `job.NAME.FIELD`, `platform.SECTION.FIELD` and variant groups.

/// Sets `a.b.c = v` in a TOML tree, creating tables as needed.
pub fn set_dotted(root: &mut toml::Value, key: &str, v: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("empty key segment".into());
    }
    let mut cur = root;
    for (i, p) in parts.iter().enumerate() {
        let table = cur
            .as_table_mut()
            .ok_or_else(|| format!("`{}` is not a table", parts[..i].join(".")))?;
        if i + 1 == parts.len() {
            table.insert((*p).to_string(), v);
            return Ok(());
        }
        cur = table
            .entry((*p).to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
    }
    Ok(())
}

/// Applies one scenario override. Keys: top-level fields (`duration_ms`),
/// `job.NAME.FIELD` and `job.NAME.workload.FIELD`, `platform.SECTION.FIELD`,
/// and a variant key (`[variant.KEY.VALUE]`), whose value names the group of
/// overrides to apply (a string, or an integer for numeric names).
pub fn apply_override(root: &mut toml::Value, key: &str, v: toml::Value) -> Result<(), String> {
    // a variant key applies its named group of overrides
    let group = root
        .get("variant")
        .and_then(|t| t.get(key))
        .and_then(|g| g.as_table())
        .cloned();
    if let Some(groups) = group {
        let name = match &v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            _ => {
                return Err(format!(
                    "variant `{key}` takes the name of one of its values"
                ))
            }
        };
        let name = name.as_str();
        let sets = groups
            .get(name)
            .and_then(|t| t.as_table())
            .ok_or_else(|| {
                format!(
                    "variant `{key}` has no value `{name}` (has: {})",
                    groups.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?
            .clone();
        for (k, val) in sets {
            if root.get("variant").and_then(|t| t.get(&k)).is_some() {
                return Err(format!(
                    "variant `{key}.{name}` sets variant `{k}`: variants do not nest"
                ));
            }
            apply_override(root, &k, val)?;
        }
        return Ok(());
    }
    if let Some(rest) = key.strip_prefix("platform.") {
        let table = root.as_table_mut().ok_or("scenario is not a table")?;
        let ps = table
            .entry("platform_set")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        ps.as_table_mut()
            .ok_or("platform_set is not a table")?
            .insert(rest.to_string(), v);
        return Ok(());
    }
    if let Some(rest) = key.strip_prefix("job.") {
        let (name, field) = rest.split_once('.').ok_or("expected job.NAME.FIELD")?;
        let jobs = root
            .get_mut("job")
            .and_then(|j| j.as_array_mut())
            .ok_or("scenario has no jobs")?;
        let job = jobs
            .iter_mut()
            .find(|j| j.get("name").and_then(|n| n.as_str()) == Some(name))
            .ok_or_else(|| format!("no job named `{name}`"))?;
        return set_dotted(job, field, v);
    }
    set_dotted(root, key, v)
}

/// Parses the value half of `key=value`: a TOML scalar, else a bare string.
pub fn parse_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_string())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

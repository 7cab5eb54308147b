//! The built-in platform and scenario files, compiled into the binary so
//! `memtamer sim run NAME` works from any directory.

/// A built-in file: (name, text).
pub type Builtin = (&'static str, &'static str);

/// Built-in platforms (the seeds' machines).
pub const PLATFORMS: &[Builtin] = &[
    ("pats", include_str!("../builtin/platforms/pats.toml")),
    (
        "pats-dimc",
        include_str!("../builtin/platforms/pats-dimc.toml"),
    ),
    (
        "pats-2pm",
        include_str!("../builtin/platforms/pats-2pm.toml"),
    ),
    (
        "pats-3pm",
        include_str!("../builtin/platforms/pats-3pm.toml"),
    ),
    ("dicio", include_str!("../builtin/platforms/dicio.toml")),
    ("ahn", include_str!("../builtin/platforms/ahn.toml")),
    ("kit", include_str!("../builtin/platforms/kit.toml")),
    ("thesis", include_str!("../builtin/platforms/thesis.toml")),
];

/// Built-in scenarios (the seeds' baseline experiments).
pub const SCENARIOS: &[Builtin] = &[
    (
        "pats-fig1-write",
        include_str!("../builtin/scenarios/pats-fig1-write.toml"),
    ),
    (
        "pats-fig1-read",
        include_str!("../builtin/scenarios/pats-fig1-read.toml"),
    ),
    (
        "pats-fig3",
        include_str!("../builtin/scenarios/pats-fig3.toml"),
    ),
    (
        "pats-fig4-memcached",
        include_str!("../builtin/scenarios/pats-fig4-memcached.toml"),
    ),
    (
        "pats-fig4-mbw",
        include_str!("../builtin/scenarios/pats-fig4-mbw.toml"),
    ),
    (
        "pats-fig5-simc",
        include_str!("../builtin/scenarios/pats-fig5-simc.toml"),
    ),
    (
        "pats-fig5-dimc",
        include_str!("../builtin/scenarios/pats-fig5-dimc.toml"),
    ),
    (
        "pats-fig6",
        include_str!("../builtin/scenarios/pats-fig6.toml"),
    ),
    (
        "pats-fig7",
        include_str!("../builtin/scenarios/pats-fig7.toml"),
    ),
    (
        "pats-fig8",
        include_str!("../builtin/scenarios/pats-fig8.toml"),
    ),
    (
        "pats-fig10",
        include_str!("../builtin/scenarios/pats-fig10.toml"),
    ),
    (
        "pats-fig11",
        include_str!("../builtin/scenarios/pats-fig11.toml"),
    ),
    (
        "pats-fig12",
        include_str!("../builtin/scenarios/pats-fig12.toml"),
    ),
    (
        "pats-fig13",
        include_str!("../builtin/scenarios/pats-fig13.toml"),
    ),
    (
        "pats-fig14",
        include_str!("../builtin/scenarios/pats-fig14.toml"),
    ),
    (
        "dicio-fig2",
        include_str!("../builtin/scenarios/dicio-fig2.toml"),
    ),
    (
        "dicio-fig4",
        include_str!("../builtin/scenarios/dicio-fig4.toml"),
    ),
    (
        "dicio-fig5",
        include_str!("../builtin/scenarios/dicio-fig5.toml"),
    ),
    (
        "dicio-fig6",
        include_str!("../builtin/scenarios/dicio-fig6.toml"),
    ),
    (
        "dicio-s51",
        include_str!("../builtin/scenarios/dicio-s51.toml"),
    ),
    (
        "dicio-s52",
        include_str!("../builtin/scenarios/dicio-s52.toml"),
    ),
    (
        "dicio-multi",
        include_str!("../builtin/scenarios/dicio-multi.toml"),
    ),
    (
        "ahn-fig2a",
        include_str!("../builtin/scenarios/ahn-fig2a.toml"),
    ),
    (
        "ahn-fig4",
        include_str!("../builtin/scenarios/ahn-fig4.toml"),
    ),
    (
        "ahn-table2",
        include_str!("../builtin/scenarios/ahn-table2.toml"),
    ),
    (
        "kit-fig5",
        include_str!("../builtin/scenarios/kit-fig5.toml"),
    ),
    (
        "yang-fig4-ntwrite",
        include_str!("../builtin/scenarios/yang-fig4-ntwrite.toml"),
    ),
    ("demo", include_str!("../builtin/scenarios/demo.toml")),
    (
        "archtm-replay",
        include_str!("../builtin/scenarios/archtm-replay.toml"),
    ),
    (
        "pmdk-replay",
        include_str!("../builtin/scenarios/pmdk-replay.toml"),
    ),
    (
        "ribbon-linestate",
        include_str!("../builtin/scenarios/ribbon-linestate.toml"),
    ),
    (
        "ribbon-char",
        include_str!("../builtin/scenarios/ribbon-char.toml"),
    ),
    (
        "ribbon-eval",
        include_str!("../builtin/scenarios/ribbon-eval.toml"),
    ),
    (
        "ribbon-oracle",
        include_str!("../builtin/scenarios/ribbon-oracle.toml"),
    ),
    (
        "ribbon-contention",
        include_str!("../builtin/scenarios/ribbon-contention.toml"),
    ),
];

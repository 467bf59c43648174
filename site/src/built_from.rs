//! At which commit a page's data was made, against the commit the site was built from: every
//! page of a run says both, and how far apart they are, so results from older code are never
//! shown as if the shipped code had made them.
//!
//! The build is told its own commit (`site build --commit`, else `GITHUB_SHA`, else the checkout's
//! `HEAD`) and how to count the commits between two: [`BuiltFrom::from_checkout`] asks git in the
//! current directory (the site binary and the runner's own build call it); everything else only
//! words what it was told. A build told nothing says that it does not know.

/// How many commits lie between a data commit and the site's commit: `Some(n)` when the data
/// commit is an ancestor of the site's (n = 0 when they are the same), `None` when that is not
/// known (no history, or not an ancestor).
pub type Distance = dyn Fn(&str, &str) -> Option<u32> + Send + Sync;

/// The commit a build runs from, and how it measures the distance to a data commit.
pub struct BuiltFrom {
    /// The site's commit (full hex), if the build knows it.
    pub commit: Option<String>,
    /// Counts the commits from a data commit (first) to the site's (second).
    pub distance: Box<Distance>,
}

impl Default for BuiltFrom {
    fn default() -> Self {
        BuiltFrom {
            commit: None,
            distance: Box::new(|_, _| None),
        }
    }
}

impl std::fmt::Debug for BuiltFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltFrom")
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

/// A commit as pages show it: its first 12 hex digits.
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

impl BuiltFrom {
    /// A build from the checkout in the current directory: at `commit` if given, else
    /// `GITHUB_SHA`, else `git rev-parse HEAD` (none outside a checkout); distances counted with
    /// `git rev-list` when the data commit is an ancestor of the site's.
    pub fn from_checkout(commit: Option<String>) -> BuiltFrom {
        let commit = commit.or_else(|| {
            std::env::var("GITHUB_SHA")
                .ok()
                .filter(|c| !c.is_empty())
                .or_else(|| git(&["rev-parse", "HEAD"]))
        });
        BuiltFrom {
            commit,
            distance: Box::new(|data, site| {
                // The data commit comes from a results file: only a hash reaches git, never an
                // option or a revision expression.
                let hash = |c: &str| {
                    (4..=40).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_hexdigit())
                };
                if !hash(data) || !hash(site) {
                    return None;
                }
                let ancestor = std::process::Command::new("git")
                    .args(["merge-base", "--is-ancestor", data, site])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .ok()?
                    .success();
                if !ancestor {
                    return None;
                }
                git(&["rev-list", "--count", &format!("{data}..{site}")])?
                    .parse()
                    .ok()
            }),
        }
    }

    /// A build at `commit` whose distances are all unknown (tests, and builds outside a
    /// checkout that were told their commit).
    pub fn at(commit: &str) -> BuiltFrom {
        BuiltFrom {
            commit: Some(commit.to_owned()),
            distance: Box::new(|_, _| None),
        }
    }

    /// `line` (what a run ran against), followed by [`BuiltFrom::words`].
    pub fn after(&self, line: String, data: Option<&String>) -> String {
        format!("{line} {}", self.words(data.map(String::as_str)))
    }

    /// One sentence: at which commit the data was made and how that stands to the site's.
    pub fn words(&self, data: Option<&str>) -> String {
        let Some(data) = data.filter(|d| !d.is_empty()) else {
            return "The run did not record the commit its code was at.".to_owned();
        };
        let Some(site) = self.commit.as_deref() else {
            return format!(
                "Data made at commit {}; the commit this site was built from is not known.",
                short(data)
            );
        };
        let distance = if data == site {
            Some(0)
        } else {
            (self.distance)(data, site)
        };
        match distance {
            Some(0) => format!(
                "Data made at commit {}, the commit this site was built from.",
                short(data)
            ),
            Some(n) => format!(
                "Data made at commit {}, {n} commit{} before the one this site was built from ({}): \
                 the code that made it is older than the code shipped with it.",
                short(data),
                if n == 1 { "" } else { "s" },
                short(site)
            ),
            None => format!(
                "Data made at commit {}, not the commit this site was built from ({}); how far \
                 apart they are is not known here.",
                short(data),
                short(site)
            ),
        }
    }
}

/// One line git prints for `args` in the current directory, if it runs and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef01234567";
    const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn each_relation_has_its_own_words() {
        let unknown = BuiltFrom::default();
        assert!(unknown.words(Some(A)).contains("not known"));
        assert!(unknown.words(None).contains("did not record"));
        let same = BuiltFrom::at(A);
        assert!(same
            .words(Some(A))
            .ends_with("0123456789ab, the commit this site was built from."));
        let behind = BuiltFrom {
            commit: Some(B.into()),
            distance: Box::new(|d, s| (d == A && s == B).then_some(3)),
        };
        let w = behind.words(Some(A));
        assert!(
            w.contains("3 commits before") && w.contains("89abcdef0123"),
            "{w}"
        );
        let apart = BuiltFrom::at(B).words(Some(A));
        assert!(
            apart.contains("not the commit this site was built from"),
            "{apart}"
        );
    }
}

//! Where a developer's home keeps secrets: the paths hidden by default
//! from the model's commands (an empty tmpfs over a directory, /dev/null
//! over a file) and from its file tools, whatever `files` says.
//!
//! The list is data: one category a row, each with the well-known paths of
//! the common tools under `$HOME`. A user adds paths with `sandbox_hide`
//! and takes one off with `sandbox_expose` (the path as listed here, under
//! their home). To add a tool, add its path to its category (or a new
//! category) and a line to the test below if it is one the red team named.
//! Directories are hidden whole: a browser profile or a password store is
//! all secrets. Paths that do not exist stay in the list, so one created
//! later is hidden from the next command.

use std::path::{Path, PathBuf};

/// One kind of secret store, and where tools keep it (relative to `$HOME`).
pub struct Category {
    /// Its name in `policy/status`.
    pub name: &'static str,
    /// Files and directories under the home directory.
    pub paths: &'static [&'static str],
}

/// The credential stores hidden by default.
pub const CATEGORIES: &[Category] = &[
    Category { name: "SSH and GPG keys", paths: &[".ssh", ".gnupg", ".pki"] },
    Category {
        name: "package-registry tokens",
        paths: &[
            ".npmrc",
            ".yarnrc",
            ".yarnrc.yml",
            ".config/yarn",
            ".bunfig.toml",
            ".pypirc",
            ".config/pip",
            ".pip/pip.conf",
            ".config/pypoetry/auth.toml",
            ".local/share/python_keyring",
            ".cargo/credentials",
            ".cargo/credentials.toml",
            ".gem/credentials",
            ".local/share/gem/credentials",
            ".m2/settings.xml",
            ".m2/settings-security.xml",
            ".gradle/gradle.properties",
            ".nuget/NuGet/NuGet.Config",
            ".config/NuGet/NuGet.Config",
            ".composer/auth.json",
            ".config/composer/auth.json",
            ".hex/hex.config",
            ".mix/hex.config",
            ".pub-cache/credentials.json",
            ".config/dart/pub-credentials.json",
        ],
    },
    Category {
        name: "cloud and deploy CLIs",
        paths: &[
            ".aws",
            ".config/gcloud",
            ".azure",
            ".config/doctl",
            ".fly",
            ".config/heroku",
            ".local/share/heroku",
            ".vercel",
            ".local/share/com.vercel.cli",
            ".config/vercel",
            ".netlify",
            ".config/netlify",
            ".config/configstore",
            ".terraform.d/credentials.tfrc.json",
            ".terraformrc",
            ".pulumi/credentials.json",
            ".oci",
            ".config/hcloud",
            ".cloudflared",
            ".config/.wrangler",
            ".bluemix",
            ".config/openstack",
            ".s3cfg",
            ".config/rclone",
        ],
    },
    Category {
        name: "container and cluster tools",
        paths: &[
            ".docker/config.json",
            ".config/containers/auth.json",
            ".kube",
            ".config/helm/repositories.yaml",
            ".config/helm/registry",
            ".minikube",
        ],
    },
    Category {
        name: "VCS hosts",
        paths: &[
            ".git-credentials",
            ".config/git/credentials",
            ".config/gh",
            ".config/glab-cli",
            ".config/hub",
            ".config/tea",
            ".netrc",
            ".config/jira",
        ],
    },
    Category {
        name: "password managers",
        paths: &[
            ".password-store",
            ".local/share/gopass",
            ".config/gopass",
            ".config/op",
            ".op",
            ".config/Bitwarden",
            ".config/Bitwarden CLI",
            ".config/keepassxc",
            ".local/share/keepassxc",
            ".keepass",
        ],
    },
    Category {
        name: "desktop keyrings",
        paths: &[".local/share/keyrings", ".local/share/kwalletd", ".kde/share/apps/kwallet", "Library/Keychains"],
    },
    Category {
        name: "browser profiles",
        paths: &[
            ".mozilla",
            "snap/firefox",
            ".var/app/org.mozilla.firefox",
            ".config/google-chrome",
            ".config/google-chrome-beta",
            ".config/google-chrome-unstable",
            ".config/chromium",
            "snap/chromium",
            ".var/app/org.chromium.Chromium",
            ".config/BraveSoftware",
            ".config/microsoft-edge",
            ".config/microsoft-edge-beta",
            ".config/vivaldi",
            ".config/opera",
            "Library/Application Support/Google/Chrome",
            "Library/Application Support/Chromium",
            "Library/Application Support/Firefox",
            "Library/Application Support/BraveSoftware",
            "Library/Application Support/Microsoft Edge",
            "Library/Application Support/Vivaldi",
            "Library/Cookies",
            "Library/Safari",
        ],
    },
    Category {
        name: "shell and REPL histories",
        paths: &[
            ".bash_history",
            ".zsh_history",
            ".zhistory",
            ".histfile",
            ".history",
            ".sh_history",
            ".local/share/fish/fish_history",
            ".config/fish/fish_history",
            ".local/share/atuin",
            ".python_history",
            ".node_repl_history",
            ".psql_history",
            ".mysql_history",
            ".sqlite_history",
            ".irb_history",
            ".pry_history",
            ".rediscli_history",
            ".Rhistory",
            ".lesshst",
            ".ipython/profile_default/history.sqlite",
            ".local/share/ipython",
        ],
    },
];

/// Every path of [`CATEGORIES`] under `home`, with its category.
pub fn under(home: &Path) -> impl Iterator<Item = (&'static str, PathBuf)> + '_ {
    CATEGORIES.iter().flat_map(move |c| c.paths.iter().map(move |p| (c.name, home.join(p))))
}

/// The category `path` (as hidden: under `home`) belongs to, if any.
pub fn category_of(home: &Path, path: &Path) -> Option<&'static str> {
    under(home).find(|(_, p)| path.starts_with(p)).map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_the_red_team_read_is_hidden() {
        let home = Path::new("/home/u");
        let read = [
            ".npmrc",
            ".pypirc",
            ".cargo/credentials.toml",
            ".password-store/github.gpg",
            ".mozilla/firefox/abc.default/cookies.sqlite",
            ".config/google-chrome/Default/Cookies",
            ".local/share/keyrings/login.keyring",
            ".config/gcloud/credentials.db",
            ".ssh/id_ed25519",
            ".aws/credentials",
            ".gnupg/private-keys-v1.d",
            ".config/gh/hosts.yml",
            ".netrc",
            ".git-credentials",
            ".docker/config.json",
            ".kube/config",
            ".bash_history",
        ];
        for p in read {
            assert!(category_of(home, &home.join(p)).is_some(), "{p} is not hidden");
        }
        assert_eq!(category_of(home, &home.join(".config/nvim/init.lua")), None);
        assert_eq!(category_of(home, &home.join(".cargo/registry")), None, "toolchains stay readable");
    }

    #[test]
    fn no_category_hides_a_whole_toolchain_or_config_directory() {
        for (_, p) in under(Path::new("/h")) {
            let rel = p.strip_prefix("/h").unwrap().to_string_lossy().into_owned();
            for broad in [".config", ".local", ".local/share", ".cargo", ".npm", ".m2", ".gradle", "Library", "snap"] {
                assert_ne!(rel, broad, "{rel} would hide a toolchain's whole directory");
            }
        }
    }
}

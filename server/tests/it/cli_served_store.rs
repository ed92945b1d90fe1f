//! The `magrathea` command on a store `magrathea serve` has served: its runs keep the served
//! tree's rules, so that recovering a tenant's runs by hand does not lift its protections.

use crate::cli_common::{Project, code, stderr, stdout};
use crate::serve_child::{ServeChild, serve_command};

const SHELL: &str = r#"
start: a
states:
  a:
    type: shell_task
    dirName: workspace
    run: "echo ran > ran.txt"
    on: { success: done }
  done:
    type: terminal
"#;

#[test]
fn the_command_drives_a_served_store_s_runs_under_the_served_rules() {
    let p = Project::new();
    p.workflow("sh", SHELL);
    // The tenant sets no `execution:`: a served tree denies shell steps, the owner's own
    // project store allows them.
    let own = p.cli(&["run", "sh"]);
    assert_eq!(code(&own), 0, "{}{}", stdout(&own), stderr(&own));
    std::fs::remove_file(p.dir.join("ran.txt")).unwrap();

    let mut cmd = serve_command(&p.root);
    cmd.arg("--insecure-no-auth");
    let mut server = ServeChild::spawn(cmd);
    server.stop();
    let served_store = p.root.join(".magrathea");
    assert!(
        served_store.join("served").is_file(),
        "the server marks its store"
    );

    let store = served_store.to_str().unwrap();
    let out = p.cli(&["run", "sh", "--store", store]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(code(&out), 1, "{said}");
    assert!(said.contains("MAG-PL001"), "{said}");
    assert!(!p.dir.join("ran.txt").exists(), "the step did not run");
}

//! `magrathea resume` while a server owns the store: the server drives the runs (it recovered
//! them when it opened the store), and `resume` is its client, printing the project's
//! unfinished runs instead of failing on the store's lock. (An owner that drives only its own
//! runs is waited for: `cli_owner::following`.)

use crate::cli_common::{code, stderr, stdout};
use crate::cli_owner::{cli, project, serve_owner, two_runs};

#[test]
fn resume_is_a_client_of_the_store_owner() {
    let p = project();
    let (done, waiting) = two_runs(&p);
    let owner = serve_owner(&p);
    let out = cli(&p, &["resume", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("the store is open in another magrathea process, which drives its runs"),
        "{}",
        stderr(&out)
    );
    let listed = stdout(&out);
    // The run waiting at its gate; not the finished one.
    assert!(listed.contains(&waiting), "{listed}");
    assert!(!listed.contains(&done), "{listed}");
    drop(owner);
}

use super::*;

/// The names a "did you mean" hint is chosen from are listed beneath the project in a
/// served tree: a workflows directory swapped for a link to another tenant's (as a step
/// racing a lookup could swap it) gives none of that tenant's names.
#[test]
fn a_hint_never_names_documents_behind_a_link_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let theirs = root.join("globex/shop/_vance/workflows");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("gate.yaml"), "start: a\n").unwrap();
    std::fs::create_dir_all(root.join("acme/shop/_vance")).unwrap();
    std::os::unix::fs::symlink(&theirs, root.join("acme/shop/_vance/workflows")).unwrap();
    let scope = Scope::new("acme", "shop");
    let served = DocumentSource::new(root).served();
    assert!(served.document_names(&scope, "workflows").is_empty());
    // The owner's own tree follows its links, as everywhere else.
    let own = DocumentSource::new(root);
    assert_eq!(own.document_names(&scope, "workflows"), ["gate"]);
}

#[test]
fn cascade_prefers_the_project_then_the_tenant_then_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let scope = Scope::new("acme", "shop");
    let p = root.join("acme/shop/_vance/workflows");
    let t = root.join("acme/_tenant/_vance/workflows");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("a.yaml"), "tenant").unwrap();
    std::fs::write(t.join("b.yaml"), "tenant-b").unwrap();
    std::fs::write(p.join("a.yaml"), "project").unwrap();
    let docs = DocumentSource::new(root);
    assert_eq!(docs.workflow(&scope, "a").unwrap().1, "project");
    assert_eq!(docs.workflow(&scope, "b").unwrap().1, "tenant-b");
    let err = docs.workflow(&scope, "c").unwrap_err().to_string();
    assert!(err.contains("acme/shop/_vance/workflows/c.yaml"), "{err}");
    assert!(
        err.contains("acme/_tenant/_vance/workflows/c.yaml"),
        "{err}"
    );
    assert_eq!(docs.workflow_names(&scope), vec!["a", "b"]);
}

#[test]
fn path_traversal_is_rejected() {
    let docs = DocumentSource::new("/nonexistent");
    let scope = Scope::new("t", "p");
    for bad in ["../x", "a/b", "..", ".hidden", "", "a\\b"] {
        let err = docs.workflow(&scope, bad).unwrap_err();
        assert!(err.to_string().contains("[MAG-DOC002]"), "{bad}: {err}");
    }
    // A letter outside ASCII is refused, in words that do not call it no letter.
    let err = docs.workflow(&scope, "über").unwrap_err().to_string();
    assert!(
        err.contains("invalid document name 'über': use a plain file name of ASCII letters"),
        "{err}"
    );
}

#[test]
fn drafts_start_only_from_the_project_and_archived_workflows_refuse_starts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let scope = Scope::new("acme", "shop");
    let docs = DocumentSource::new(root);
    let vance = root.join("acme/shop/_vance");
    std::fs::create_dir_all(vance.join("workflows")).unwrap();
    std::fs::write(vance.join("workflows/a.yaml"), "live").unwrap();
    let err = docs.workflow_to_start(&scope, "a", true).unwrap_err();
    assert!(err.to_string().contains("[MAG-VR002]"), "{err}");
    std::fs::create_dir_all(vance.join(DRAFTS_DIR)).unwrap();
    std::fs::write(vance.join(DRAFTS_DIR).join("a.yaml"), "draft").unwrap();
    assert_eq!(
        docs.workflow_to_start(&scope, "a", false).unwrap().1,
        "live"
    );
    assert_eq!(
        docs.workflow_to_start(&scope, "a", true).unwrap().1,
        "draft"
    );
    std::fs::create_dir_all(vance.join(STATE_DIR)).unwrap();
    std::fs::write(docs.archive_marker(&scope, "a"), "archived: true\n").unwrap();
    assert!(docs.is_archived(&scope, "a"));
    for draft in [false, true] {
        let err = docs.workflow_to_start(&scope, "a", draft).unwrap_err();
        assert!(err.to_string().contains("[MAG-VR001]"), "{err}");
    }
    // Reading the document (validate, graph) is not a start.
    assert_eq!(docs.workflow(&scope, "a").unwrap().1, "live");
}

/// In a served tree, another tenant's archive marker reached through a link archives
/// nothing here, and the project's own does.
#[test]
fn only_a_marker_inside_the_project_archives_a_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let theirs = root.join("globex/shop/_vance").join(STATE_DIR);
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("a.yaml"), "archived: true\n").unwrap();
    let vance = root.join("acme/shop/_vance");
    std::fs::create_dir_all(&vance).unwrap();
    std::os::unix::fs::symlink(&theirs, vance.join(STATE_DIR)).unwrap();
    let scope = Scope::new("acme", "shop");
    let served = DocumentSource::new(root).served();
    assert!(!served.is_archived(&scope, "a"));
    assert!(!served.is_archived(&scope, "b"));
    std::fs::remove_file(vance.join(STATE_DIR)).unwrap();
    std::fs::create_dir(vance.join(STATE_DIR)).unwrap();
    std::fs::write(served.archive_marker(&scope, "a"), "archived: true\n").unwrap();
    assert!(served.is_archived(&scope, "a"));
    assert!(!served.is_archived(&scope, "b"));
}

#[test]
fn a_project_dir_maps_to_tenant_and_project() {
    let (docs, scope) = DocumentSource::for_project_dir(Path::new("/srv/acme/shop"));
    assert_eq!(scope, Scope::new("acme", "shop"));
    assert_eq!(docs.project_dir(&scope), Path::new("/srv/acme/shop"));
    assert_eq!(docs.tenant_dir(&scope), Path::new("/srv/acme/_tenant"));
}

/// The first byte that is not UTF-8 is placed as YAML places text: after line feeds, lone
/// carriage returns or both together, and with no column for a byte-order mark.
#[test]
fn the_first_byte_that_is_not_utf8_is_placed_across_line_endings() {
    let at = |bytes: &[u8]| utf8_position(&String::from_utf8(bytes.to_vec()).unwrap_err());
    assert_eq!(at(b"a: 1\nb: caf\xe9\n"), (2, 7));
    assert_eq!(at(b"a: 1\rb: caf\xe9\r"), (2, 7));
    assert_eq!(at(b"a: 1\r\nb: caf\xe9\r\n"), (2, 7));
    assert_eq!(at(b"a: 1\r\rb: caf\xe9"), (3, 7));
    assert_eq!(at(b"\xef\xbb\xbfa: caf\xe9"), (1, 7));
    assert_eq!(at(b"\xe9"), (1, 1));
}

use super::*;

fn context(command: &[&str], home: &Path) -> ServerContext {
    ServerContext {
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        cwd: home.to_path_buf(),
        vars: vec![("HOME".into(), home.display().to_string()), ("PATH".into(), "/usr/bin:/bin".into())],
    }
}

fn access_of(profile: &Profile, path: &Path) -> Option<Access> {
    profile.grants.iter().find(|g| g.path == path).map(|g| g.access)
}

#[test]
fn a_directory_argument_may_be_written_and_nothing_else_of_home_is_granted() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::create_dir(&project).unwrap();
    let profile =
        Profile::auto(&context(&["node", "server.js", project.to_str().unwrap()], home.path()), &Request::default())
            .unwrap();
    assert_eq!(access_of(&profile, &project), Some(Access::Write));
    assert!(!profile.grants.iter().any(|g| home.path().join(".ssh").starts_with(&g.path)), "{}", profile.explain());
}

#[test]
fn a_script_under_node_modules_grants_the_outermost_node_modules_read_only() {
    let home = tempfile::tempdir().unwrap();
    let package = home.path().join("app/node_modules/@scope/server/dist");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("index.js"), "").unwrap();
    let script = package.join("index.js");
    let profile =
        Profile::auto(&context(&["node", script.to_str().unwrap()], home.path()), &Request::default()).unwrap();
    assert_eq!(access_of(&profile, &home.path().join("app/node_modules")), Some(Access::Read));
    assert_eq!(access_of(&profile, &home.path().join("app")), None);
}

#[test]
fn npx_gets_its_cache_written_and_the_network_stays_off_by_default() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".npm")).unwrap();
    let profile = Profile::auto(
        &context(&["npx", "-y", "@modelcontextprotocol/server-memory"], home.path()),
        &Request::default(),
    )
    .unwrap();
    if Path::new("/usr/bin/npx").exists() || Path::new("/bin/npx").exists() {
        assert_eq!(access_of(&profile, &home.path().join(".npm")), Some(Access::Write));
    }
    assert_eq!(profile.network, vec![NetworkGrant::None]);
}

#[test]
fn a_server_known_to_fetch_gets_the_network_unless_a_grant_says_otherwise() {
    let home = tempfile::tempdir().unwrap();
    let known = Profile::auto(&context(&["uvx", "mcp-server-fetch"], home.path()), &Request::default()).unwrap();
    assert_eq!(known.network, vec![NetworkGrant::Any]);
    let request = Request { network: vec![NetworkGrant::None], ..Request::default() };
    let granted = Profile::auto(&context(&["uvx", "mcp-server-fetch"], home.path()), &request).unwrap();
    assert_eq!(granted.network, vec![NetworkGrant::None]);
}

#[test]
fn a_grant_of_a_missing_path_is_an_error_that_names_it() {
    let home = tempfile::tempdir().unwrap();
    let request = Request { read: vec![home.path().join("nope")], ..Request::default() };
    let error = Profile::auto(&context(&["node"], home.path()), &request).unwrap_err();
    assert!(error.to_string().contains("nope"), "{error}");
}

#[test]
fn explain_says_why_for_every_grant() {
    let home = tempfile::tempdir().unwrap();
    let profile = Profile::auto(&context(&["node"], home.path()), &Request::default()).unwrap();
    let text = profile.explain();
    assert!(text.contains("/usr") && text.contains("programs, libraries"), "{text}");
    assert!(text.lines().any(|line| line.starts_with("network  none")), "{text}");
}

#[test]
fn a_file_argument_in_the_home_grants_that_file_alone() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    for name in ["notes.txt", "server.py"] {
        let file = home.path().join(name);
        std::fs::write(&file, "").unwrap();
        let profile =
            Profile::auto(&context(&["python3", file.to_str().unwrap()], home.path()), &Request::default()).unwrap();
        assert_eq!(access_of(&profile, &file), Some(Access::Read), "{name}");
        assert!(!profile.grants.iter().any(|g| home.path().join(".ssh").starts_with(&g.path)), "{}", profile.explain());
    }
}

#[test]
fn a_script_in_a_project_grants_its_directory_and_a_data_file_only_itself() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("server.py"), "").unwrap();
    std::fs::write(project.join("data.json"), "").unwrap();
    let script = project.join("server.py");
    let data = project.join("data.json");
    let profile = Profile::auto(
        &context(&["python3", script.to_str().unwrap(), "--data", data.to_str().unwrap()], home.path()),
        &Request::default(),
    )
    .unwrap();
    assert_eq!(access_of(&profile, &project), Some(Access::Read), "{}", profile.explain());
    let other = tempfile::tempdir().unwrap();
    let elsewhere = other.path().join("config.json");
    std::fs::write(&elsewhere, "").unwrap();
    let profile =
        Profile::auto(&context(&["node", "--config", elsewhere.to_str().unwrap()], home.path()), &Request::default())
            .unwrap();
    assert_eq!(access_of(&profile, &elsewhere), Some(Access::Read));
    assert_eq!(access_of(&profile, other.path()), None, "{}", profile.explain());
}

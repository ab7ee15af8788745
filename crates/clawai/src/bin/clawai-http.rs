//! `clawai-http`: the `clawai` commands, running the HTTP transports (`proxy --listen`,
//! `proxy --upstream`), `clawai ui`, `gateway` and `mcp-server` in process. `clawai` execs it for those.

fn main() {
    clawai::main(clawai::HttpTransport::InProcess(clawai::HttpRunners {
        proxy: clawai::http_cmd::run_http,
        ui: clawai::ui_cmd::run_ui,
        gateway: clawai::gateway_cmd::run_gateway,
        mcp_server: clawai::gateway_cmd::run_mcp_server,
        scan: clawai::scan_cmd::run_scan,
        audit_ship: clawai::audit_postgres::ship,
        audit_verify_postgres: clawai::audit_postgres::verify,
        shared: clawai::cluster_cmd::run_shared,
    }))
}

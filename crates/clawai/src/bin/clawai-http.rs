//! `clawai-http`: the `clawai` commands, running the HTTP transports (`proxy --listen`,
//! `proxy --upstream`) in process. `clawai` execs it for those.

fn main() {
    clawai::main(clawai::HttpTransport::InProcess(clawai::http_cmd::run_http))
}

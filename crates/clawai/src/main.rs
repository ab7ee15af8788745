//! `clawai`: see the library for the commands. HTTP transports are handed to the
//! `clawai-http` binary beside this one, which keeps this one small.

fn main() {
    clawai::main(clawai::HttpTransport::Helper)
}

"""`bench aws rehearse`: the real Terraform module and the real AWS provider applied against a local AWS
emulator (moto's server on 127.0.0.1), the instance's user data booted here in a sandbox, then `bench aws
status`, `fetch` and `down` as a user runs them.  Nothing here talks to AWS; nothing is written into terraform/.

- emulator: the moto server (its own process, 127.0.0.1 only) and the stand-in Debian AMI it is handed;
- module_copy: the module copied to a temporary directory with the rehearsal's provider override, and the
  Terraform CLI configuration that installs the provider from a local plugin directory;
- sandbox: the instance's user data, taken from the emulator, run here as the instance would run it;
- flow: the phases in order, and the cleanup whatever happens.
"""

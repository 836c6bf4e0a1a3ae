output "ids" {
  description = "The instances' ids, in the order of var.instances."
  value       = aws_instance.this[*].id
}

output "private_ips" {
  description = "The instances' private IPs, in the order of var.instances."
  value       = aws_instance.this[*].private_ip
}

output "instances" {
  description = "The instances themselves (every attribute), for the module's tests."
  value       = aws_instance.this
}

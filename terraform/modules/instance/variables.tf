# ----- what differs between the calls --------------------------------------------------------------------
# A plain number besides the list: checkov (tests/cloud/test_terraform.py) expands count only from a number it
# can evaluate, and checks every instance only when it does.
variable "instance_count" {
  description = "How many instances: the length of instances."
  type        = number
}

variable "instances" {
  description = "One element per instance, in order: its Name tag, its user data (gzip-compressed, then base64) and any tags of its own."
  type = list(object({
    name             = string
    user_data_base64 = string
    tags             = optional(map(string), {})
  }))
}

variable "role" {
  description = "The role tag: bench, spark-worker or bench-node."
  type        = string
}

variable "security_group_ids" {
  description = "Security groups of every instance."
  type        = list(string)
}

variable "placement_group" {
  description = "Placement group of every instance; null = none."
  type        = string
  default     = null
}

variable "iam_instance_profile" {
  description = "Instance profile of every instance (its role's policy must exist before they boot: depends_on of the call)."
  type        = string
}

# ----- what the calls share ----------------------------------------------------------------------------
variable "run_id" {
  description = "Name of the run (the run_id tag)."
  type        = string
}

variable "ami_id" {
  description = "AMI of every instance."
  type        = string
}

variable "instance_type" {
  description = "Instance type of every instance."
  type        = string
}

variable "subnet_id" {
  description = "Subnet of every instance."
  type        = string
}

variable "associate_public_ip" {
  description = "Give every instance a public IP (egress only)."
  type        = bool
}

variable "key_name" {
  description = "EC2 key pair for SSH; null = none."
  type        = string
  default     = null
}

variable "monitoring" {
  description = "CloudWatch detailed (1-minute) monitoring."
  type        = bool
}

variable "spot" {
  description = "One-time Spot instances, terminated on interruption; false = on demand."
  type        = bool
}

variable "spot_max_price" {
  description = "Highest hourly Spot price; null = up to the on-demand price."
  type        = string
  default     = null
}

variable "root_volume_size_gb" {
  description = "Root volume size (gp3, encrypted)."
  type        = number
}

variable "data_volume_size_gb" {
  description = "Data volume size (gp3, encrypted, /dev/sdf)."
  type        = number
}

variable "data_volume_iops" {
  description = "Data volume IOPS."
  type        = number
}

variable "data_volume_throughput" {
  description = "Data volume throughput, MiB/s."
  type        = number
}

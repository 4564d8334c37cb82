"""Device energy model: device profiles with sourced numbers, activity -> current, battery life."""

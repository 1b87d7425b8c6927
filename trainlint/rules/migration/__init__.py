"""TL6xx: API migrations (renamed or removed arguments and names by library version)."""

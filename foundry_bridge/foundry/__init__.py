"""foundry"""
